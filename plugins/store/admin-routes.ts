/** Admin API of the store (decisions.md §8): the catalogue, and real-money payments. */
import type { FastifyInstance } from 'fastify';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { parseClientTimestamp, requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import { MAX_PRICE, type CategoryInput, type Product, type ProductInput } from './catalogue.ts';
import { OrderRow } from './contract.ts';
import { categoryRow, productRow } from './rows.ts';
import { pathId, type StoreDeps } from './routes.ts';
import {
  CategoryCreateBody, CategoryPatchBody, CategoryRow, IdParam, PaymentBody, ProductCreateBody, ProductPatchBody, ProductRow,
  ReorderBody, RulesPatchBody, RulesRow,
} from './schemas.ts';
import type { PurchaseRules } from './rules.ts';

const rulesRow = (r: PurchaseRules) => ({
  requiredProductID: String(r.requiredProductId), requireLinkedAccount: r.requireLinkedAccount, preventDowngrade: r.preventDowngrade,
});

type CategoryBody = Static<typeof CategoryPatchBody>;
type ProductBody = Static<typeof ProductPatchBody>;

const optionalBool = (v: unknown) => (v === undefined ? undefined : S.toBool(v));

export function categoryInput(b: CategoryBody): CategoryInput {
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

export function productInput(b: ProductBody, timeZone: string): ProductInput {
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
const done = { status: true as const };

/** One catalogue table's admin routes (list, create, reorder, get, change, delete): how each step reads and shows its rows. */
interface Resource<C extends TSchema, P extends TSchema> {
  /** Also the last part of the path. */
  kind: 'categories' | 'products';
  row: TSchema;
  createBody: C;
  patchBody: P;
  summary: Record<'list' | 'create' | 'get' | 'patch' | 'delete', string>;
  /** The domain codes each step can answer (listed in the OpenAPI document). */
  errors: Record<'create' | 'reorder' | 'get' | 'patch' | 'delete', string[]>;
  list(): Promise<unknown[]>;
  create(body: Static<C>): Promise<unknown>;
  get(id: number): Promise<unknown>;
  update(id: number, body: Static<P>): Promise<unknown>;
  remove(id: number): Promise<void>;
}

export async function storeAdminRoutes(host: FastifyInstance, { catalogue, orders, rules, settings }: StoreDeps): Promise<void> {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  const tz = () => settings.get().timezone;
  const showProduct = (p: Product) => productRow(p, tz());

  function resource<C extends TSchema, P extends TSchema>({ kind, row, summary, errors, ...r }: Resource<C, P>): void {
    const path = `/api/admin/store/${kind}`;
    app.get(path, { schema: { tags, summary: summary.list, response: { 200: Type.Array(row) } } }, () => r.list());
    app.post(path, { schema: { tags, summary: summary.create, body: r.createBody, response: { 201: row }, errors: errors.create } },
      async (request, reply) => reply.code(201).send(await r.create(request.body)));
    app.post(`${path}/reorder`, {
      schema: { tags, summary: `Order ${kind}: each listed one gets its place in the list as priority`, body: ReorderBody, response: { 200: S.ok() }, errors: errors.reorder },
    }, async ({ body }) => {
      await catalogue.reorder(kind, body.ids);
      return done;
    });
    app.get(`${path}/:id`, { schema: { tags, summary: summary.get, params: IdParam, response: { 200: row }, errors: errors.get } },
      ({ params }) => r.get(pathId(params.id)));
    app.patch(`${path}/:id`, { schema: { tags, summary: summary.patch, params: IdParam, body: r.patchBody, response: { 200: row }, errors: errors.patch } },
      ({ params, body }) => r.update(pathId(params.id), body));
    app.delete(`${path}/:id`, { schema: { tags, summary: summary.delete, params: IdParam, response: { 200: S.ok() }, errors: errors.delete } },
      async ({ params }) => {
        await r.remove(pathId(params.id));
        return done;
      });
  }

  resource({
    kind: 'categories', row: CategoryRow, createBody: CategoryCreateBody, patchBody: CategoryPatchBody,
    summary: {
      list: 'Store categories, flat', create: 'Create a store category', get: 'One store category',
      patch: 'Change, move or deactivate a store category',
      delete: 'Delete an empty store category (CONFLICT while it holds subcategories or products)',
    },
    errors: {
      create: ['CATEGORY_NOT_FOUND'], reorder: ['CATEGORY_NOT_FOUND'], get: ['CATEGORY_NOT_FOUND'], patch: ['CATEGORY_NOT_FOUND'],
      delete: ['CATEGORY_NOT_FOUND', 'CONFLICT'],
    },
    list: async () => (await catalogue.categories()).map(categoryRow),
    create: async (body) => categoryRow(await catalogue.createCategory({ ...categoryInput(body), name: body.name })),
    get: async (id) => categoryRow(await catalogue.requireCategory(id)),
    update: async (id, body) => categoryRow(await catalogue.updateCategory(id, categoryInput(body))),
    remove: (id) => catalogue.deleteCategory(id),
  });

  resource({
    kind: 'products', row: ProductRow, createBody: ProductCreateBody, patchBody: ProductPatchBody,
    summary: {
      list: 'Products with their variables', create: 'Create a product', get: 'One product',
      patch: 'Change or deactivate a product; `variables`, when sent, replaces the list',
      delete: 'Delete a product (its orders keep what was bought)',
    },
    errors: {
      create: ['CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'], reorder: ['PRODUCT_NOT_FOUND'], get: ['PRODUCT_NOT_FOUND'],
      patch: ['PRODUCT_NOT_FOUND', 'CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'], delete: ['PRODUCT_NOT_FOUND'],
    },
    list: async () => (await catalogue.products()).map(showProduct),
    create: async (body) => {
      const input = productInput(body, tz());
      return showProduct(await catalogue.createProduct({ ...input, categoryId: body.categoryID, name: body.name, price: input.price! }));
    },
    get: async (id) => showProduct(await catalogue.requireProduct(id)),
    update: async (id, body) => showProduct(await catalogue.updateProduct(id, productInput(body, tz()))),
    remove: (id) => catalogue.deleteProduct(id),
  });

  // ---- payments
  app.post('/api/admin/payments', {
    schema: {
      tags, summary: 'Record a real-money payment: a `payment` order, its credits, a donation entry',
      description: '`credit` (credits added to the balance) defaults to `amount`; `currency` to the site currency. '
        + 'A paymentAPI + paymentID pair is recorded once (CONFLICT on a repeat), so a retried gateway callback cannot credit twice.',
      body: PaymentBody, response: { 201: OrderRow }, errors: ['USER_NOT_FOUND', 'INVALID_AMOUNT', 'CONFLICT'],
    },
  }, async (request, reply) => {
    const order = await orders.recordPayment(request.body, request.apiKey?.name);
    return reply.code(201).send(order);
  });

  app.post('/api/admin/store/orders/:id/refund', {
    schema: {
      tags, summary: 'Refund a purchase paid from the balance',
      description: 'In one transaction: the price back to the balance, the cashback taken back, the stock restored, the roles it '
        + 'granted shortened or revoked, status `refunded`. A second refund is CONFLICT.',
      params: IdParam, response: { 200: OrderRow }, errors: ['ORDER_NOT_FOUND', 'CONFLICT', 'INVALID_AMOUNT'],
    },
  }, async (request) => orders.refund(pathId(request.params.id), request.apiKey?.name));

  app.get('/api/admin/store/products/:id/rules', {
    schema: { tags, summary: 'A product\'s purchase rules', params: IdParam, response: { 200: RulesRow }, errors: ['PRODUCT_NOT_FOUND'] },
  }, async (request) => rulesRow(await rules.get(pathId(request.params.id))));
  app.patch('/api/admin/store/products/:id/rules', {
    schema: {
      tags, summary: 'Change a product\'s purchase rules',
      description: 'A buy breaking one is refused with REQUIRED_PRODUCT, REQUIRED_LINKED_ACCOUNT or DOWNGRADE_NOT_ALLOWED (400).',
      params: IdParam, body: RulesPatchBody, response: { 200: RulesRow }, errors: ['PRODUCT_NOT_FOUND'],
    },
  }, async (request) => {
    const b = request.body;
    return rulesRow(await rules.set(pathId(request.params.id), {
      requiredProductId: b.requiredProductID === undefined ? undefined : Number(b.requiredProductID),
      requireLinkedAccount: optionalBool(b.requireLinkedAccount), preventDowngrade: optionalBool(b.preventDowngrade),
    }));
  });
}
