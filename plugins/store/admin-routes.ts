/** Admin API of the store (decisions.md §8): the catalogue, and real-money payments. */
import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { parseClientTimestamp, requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import { MAX_PRICE, type CategoryInput, type ProductInput } from './catalogue.ts';
import { OrderRow } from './contract.ts';
import { categoryRow, productRow } from './rows.ts';
import { pathId, type StoreDeps } from './routes.ts';
import {
  CategoryCreateBody, CategoryPatchBody, CategoryRow, IdParam, PaymentBody, ProductCreateBody, ProductPatchBody, ProductRow,
  ReorderBody,
} from './schemas.ts';

type CategoryBody = Static<typeof CategoryPatchBody>;
type ProductBody = Static<typeof ProductPatchBody>;

const optionalBool = (v: unknown) => (v === undefined ? undefined : S.toBool(v));

function categoryInput(b: CategoryBody): CategoryInput {
  return {
    parentId: b.parentID, name: b.name, slug: b.slug, imageId: b.imageID, imageType: b.imageType, priority: b.priority,
    gameStatus: optionalBool(b.gameStatus), gameTitle: b.gameTitle, gameDescription: b.gameDescription, gameItem: b.gameItem,
    isActive: optionalBool(b.isActive),
  };
}

function price(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  const cents = requireMoney(value, 'VALIDATION_ERROR', field);
  if (cents > MAX_PRICE) throw new DomainError('VALIDATION_ERROR', `${field} must be at most ${MAX_PRICE / 100}`);
  return cents;
}

function productInput(b: ProductBody, timeZone: string): ProductInput {
  let discountExpiryDate: string | undefined;
  if (b.discountExpiryDate !== undefined) {
    discountExpiryDate = parseClientTimestamp(b.discountExpiryDate, timeZone);
    if (!discountExpiryDate) throw new DomainError('VALIDATION_ERROR', 'discountExpiryDate must be a date YYYY-MM-DD HH:MM:SS');
  }
  return {
    categoryId: b.categoryID, giveRoleId: b.giveRoleID, name: b.name, imageId: b.imageID, imageType: b.imageType,
    details: b.details, price: price(b.price, 'price'), discountedPrice: price(b.discountedPrice, 'discountedPrice'),
    discountExpiryDate, duration: b.duration, stock: b.stock, priority: b.priority,
    isFeatured: optionalBool(b.isFeaturedProduct), gameStatus: optionalBool(b.gameStatus), gameTitle: b.gameTitle,
    gameDescription: b.gameDescription, gameItem: b.gameItem, isActive: optionalBool(b.isActive),
    variables: b.variables === undefined ? undefined
      : b.variables === '' ? []
        : b.variables.map((v) => ({ name: v.name, required: S.toBool(v.required), values: v.values ?? [] })),
  };
}

const tags = ['admin'];
const deleted = { 200: S.ok() };

export async function storeAdminRoutes(app: FastifyInstance, { catalogue, orders, settings }: StoreDeps): Promise<void> {
  const tz = () => settings.get().timezone;
  const showProduct = (p: Parameters<typeof productRow>[0]) => productRow(p, tz());

  // ---- categories
  const categories = '/api/admin/store/categories';
  app.get(categories, { schema: { tags, summary: 'Store categories, flat', response: { 200: Type.Array(CategoryRow) } } },
    async () => (await catalogue.categories()).map(categoryRow));
  app.post(categories, { schema: { tags, summary: 'Create a store category', body: CategoryCreateBody, response: { 201: CategoryRow } } },
    async (request, reply) => {
      const body = request.body as Static<typeof CategoryCreateBody>;
      const created = await catalogue.createCategory({ ...categoryInput(body), name: body.name });
      return reply.code(201).send(categoryRow(created));
    });
  app.post(`${categories}/reorder`, {
    schema: { tags, summary: 'Order categories: each listed one gets its place in the list as priority', body: ReorderBody, response: { 200: S.ok() } },
  }, async (request) => {
    await catalogue.reorder('categories', (request.body as Static<typeof ReorderBody>).ids);
    return { status: true as const };
  });
  app.get(`${categories}/:id`, { schema: { tags, summary: 'One store category', params: IdParam, response: { 200: CategoryRow } } },
    async (request) => categoryRow(await catalogue.requireCategory(pathId((request.params as Static<typeof IdParam>).id))));
  app.patch(`${categories}/:id`, {
    schema: { tags, summary: 'Change, move or deactivate a store category', params: IdParam, body: CategoryPatchBody, response: { 200: CategoryRow } },
  }, async (request) => {
    const id = pathId((request.params as Static<typeof IdParam>).id);
    return categoryRow(await catalogue.updateCategory(id, categoryInput(request.body as CategoryBody)));
  });
  app.delete(`${categories}/:id`, {
    schema: { tags, summary: 'Delete an empty store category (CONFLICT while it holds subcategories or products)', params: IdParam, response: deleted },
  }, async (request) => {
    await catalogue.deleteCategory(pathId((request.params as Static<typeof IdParam>).id));
    return { status: true as const };
  });

  // ---- products
  const products = '/api/admin/store/products';
  app.get(products, { schema: { tags, summary: 'Products with their variables', response: { 200: Type.Array(ProductRow) } } },
    async () => (await catalogue.products()).map(showProduct));
  app.post(products, { schema: { tags, summary: 'Create a product', body: ProductCreateBody, response: { 201: ProductRow } } },
    async (request, reply) => {
      const body = request.body as Static<typeof ProductCreateBody>;
      const input = productInput(body, tz());
      const created = await catalogue.createProduct({ ...input, categoryId: body.categoryID, name: body.name, price: input.price! });
      return reply.code(201).send(showProduct(created));
    });
  app.post(`${products}/reorder`, {
    schema: { tags, summary: 'Order products: each listed one gets its place in the list as priority', body: ReorderBody, response: { 200: S.ok() } },
  }, async (request) => {
    await catalogue.reorder('products', (request.body as Static<typeof ReorderBody>).ids);
    return { status: true as const };
  });
  app.get(`${products}/:id`, { schema: { tags, summary: 'One product', params: IdParam, response: { 200: ProductRow } } },
    async (request) => showProduct(await catalogue.requireProduct(pathId((request.params as Static<typeof IdParam>).id))));
  app.patch(`${products}/:id`, {
    schema: { tags, summary: 'Change or deactivate a product; `variables`, when sent, replaces the list', params: IdParam, body: ProductPatchBody, response: { 200: ProductRow } },
  }, async (request) => {
    const id = pathId((request.params as Static<typeof IdParam>).id);
    return showProduct(await catalogue.updateProduct(id, productInput(request.body as ProductBody, tz())));
  });
  app.delete(`${products}/:id`, { schema: { tags, summary: 'Delete a product (its orders keep what was bought)', params: IdParam, response: deleted } },
    async (request) => {
      await catalogue.deleteProduct(pathId((request.params as Static<typeof IdParam>).id));
      return { status: true as const };
    });

  // ---- payments
  app.post('/api/admin/payments', {
    schema: {
      tags, summary: 'Record a real-money payment: a `payment` order, its credits, a donation entry',
      description: '`credit` (credits added to the balance) defaults to `amount`; `currency` to the site currency. '
        + 'A paymentAPI + paymentID pair is recorded once (CONFLICT on a repeat), so a retried gateway callback cannot credit twice.',
      body: PaymentBody, response: { 201: OrderRow },
    },
  }, async (request, reply) => {
    const order = await orders.recordPayment(request.body as Static<typeof PaymentBody>, request.apiKey?.name);
    return reply.code(201).send(order);
  });
}
