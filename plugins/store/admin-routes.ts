/**
 * The store's admin API (decisions.md §8): the catalogue's categories and products, purchase rules,
 * real-money payments and refunds.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { AdminOrderRow, OrderRow } from './contract.ts';
import type { Product } from './contract.ts';
import type { DbCatalogue } from './catalogue.ts';
import type { DbOrders } from './orders.ts';
import {
  CategoryCreateBody,
  CategoryPatchBody,
  CategoryRow,
  IdParam,
  PaymentBody,
  ProductCreateBody,
  ProductPatchBody,
  ProductRow,
  ReorderBody,
  RulesPatchBody,
  RulesRow,
  categoryInput,
  categoryRow,
  optionalBool,
  productInput,
  productRow,
  rulesRow,
  pathId,
  done,
} from './schemas.ts';

const admin = ['admin'];

/** The admin routes, each group using the part of the store it needs. */
export function storeAdminRoutes(app: FastifyInstance, catalogue: DbCatalogue, orders: DbOrders, settings: SettingsService): void {
  adminCategoryRoutes(app, catalogue);
  adminProductRoutes(app, catalogue, settings);
  adminPaymentRoutes(app, orders, settings);
  adminOrderRoutes(app, orders);
  adminRuleRoutes(app, catalogue);
}

const OrdersQuery = Type.Object({
  search: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 191,
      description: "a username, a guest's in-game name or the email a guest gave for the receipt (exact, any case)",
    }),
  ),
  status: Type.Optional(Type.Union([Type.Literal('completed'), Type.Literal('refunded'), Type.Literal('disputed')])),
  type: Type.Optional(Type.Union([Type.Literal('credit'), Type.Literal('payment')])),
  before: Type.Optional(S.numeric({ description: 'orders older than this order id (the next page)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});

/** Admin: orders found by what a player tells staff. */
function adminOrderRoutes(host: FastifyInstance, store: DbOrders): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get(
    '/api/admin/store/orders',
    {
      schema: {
        tags: admin,
        summary: 'Orders, newest first: all, or those of a player or guest by name or email',
        querystring: OrdersQuery,
        response: { 200: Type.Array(AdminOrderRow) },
      },
    },
    async ({ query }) =>
      store.listOrders({
        search: query.search,
        status: query.status,
        type: query.type,
        before: query.before === undefined ? undefined : Number(query.before),
        limit: query.limit ?? 50,
      }),
  );
}

/** Admin: the store's categories. */
function adminCategoryRoutes(host: FastifyInstance, store: DbCatalogue): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get(
    '/api/admin/store/categories',
    {
      schema: { tags: admin, summary: 'Store categories, flat', response: { 200: Type.Array(CategoryRow) } },
    },
    async () => (await store.categories()).map(categoryRow),
  );
  app.post(
    '/api/admin/store/categories',
    {
      schema: { tags: admin, summary: 'Create a store category', body: CategoryCreateBody, response: { 201: CategoryRow }, errors: ['CATEGORY_NOT_FOUND'] },
    },
    async ({ body }, reply) => reply.code(201).send(categoryRow(await store.createCategory({ ...categoryInput(body), name: body.name }))),
  );
  app.post(
    '/api/admin/store/categories/reorder',
    {
      schema: {
        tags: admin,
        summary: 'Order categories: each listed one gets its place in the list as priority',
        body: ReorderBody,
        response: { 200: S.ok() },
        errors: ['CATEGORY_NOT_FOUND'],
      },
    },
    async ({ body }) => {
      await store.reorder('categories', body.ids);
      return done;
    },
  );
  app.get(
    '/api/admin/store/categories/:id',
    {
      schema: { tags: admin, summary: 'One store category', params: IdParam, response: { 200: CategoryRow }, errors: ['CATEGORY_NOT_FOUND'] },
    },
    async ({ params }) => categoryRow(await store.requireCategory(pathId(params.id))),
  );
  app.patch(
    '/api/admin/store/categories/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change, move or deactivate a store category',
        params: IdParam,
        body: CategoryPatchBody,
        response: { 200: CategoryRow },
        errors: ['CATEGORY_NOT_FOUND'],
      },
    },
    async ({ params, body }) => categoryRow(await store.updateCategory(pathId(params.id), categoryInput(body))),
  );
  app.delete(
    '/api/admin/store/categories/:id',
    {
      schema: {
        tags: admin,
        summary: 'Delete an empty store category (CONFLICT while it holds subcategories or products)',
        params: IdParam,
        response: { 200: S.ok() },
        errors: ['CATEGORY_NOT_FOUND', 'CONFLICT'],
      },
    },
    async ({ params }) => {
      await store.deleteCategory(pathId(params.id));
      return done;
    },
  );
}

/** Admin: the store's products. */
function adminProductRoutes(host: FastifyInstance, store: DbCatalogue, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  const tz = () => settings.get().timezone;
  const showProduct = (p: Product) => productRow(p, tz());
  const NEVER_SOLD =
    'A product never grants a privileged role (one that opens the staff console, or that a feature marks privileged): ' +
    'such a `giveRoleID` is a VALIDATION_ERROR naming it, and a product saved before its role became privileged cannot be bought (FORBIDDEN).';
  app.get(
    '/api/admin/store/products',
    {
      schema: { tags: admin, summary: 'Products with their variables', response: { 200: Type.Array(ProductRow) } },
    },
    async () => (await store.products()).map(showProduct),
  );
  app.post(
    '/api/admin/store/products',
    {
      schema: {
        tags: admin,
        summary: 'Create a product',
        description: NEVER_SOLD,
        body: ProductCreateBody,
        response: { 201: ProductRow },
        errors: ['VALIDATION_ERROR', 'CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    async ({ body }, reply) => {
      const input = productInput(body, tz());
      const product = await store.createProduct({ ...input, categoryId: body.categoryID, name: body.name, price: input.price! });
      return reply.code(201).send(showProduct(product));
    },
  );
  app.post(
    '/api/admin/store/products/reorder',
    {
      schema: {
        tags: admin,
        summary: 'Order products: each listed one gets its place in the list as priority',
        body: ReorderBody,
        response: { 200: S.ok() },
        errors: ['PRODUCT_NOT_FOUND'],
      },
    },
    async ({ body }) => {
      await store.reorder('products', body.ids);
      return done;
    },
  );
  app.get(
    '/api/admin/store/products/:id',
    {
      schema: { tags: admin, summary: 'One product', params: IdParam, response: { 200: ProductRow }, errors: ['PRODUCT_NOT_FOUND'] },
    },
    async ({ params }) => showProduct(await store.requireProduct(pathId(params.id))),
  );
  app.patch(
    '/api/admin/store/products/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change or deactivate a product; `variables`, when sent, replaces the list',
        description: NEVER_SOLD,
        params: IdParam,
        body: ProductPatchBody,
        response: { 200: ProductRow },
        errors: ['VALIDATION_ERROR', 'PRODUCT_NOT_FOUND', 'CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    async ({ params, body }) => showProduct(await store.updateProduct(pathId(params.id), productInput(body, tz()))),
  );
  app.delete(
    '/api/admin/store/products/:id',
    {
      schema: {
        tags: admin,
        summary: 'Delete a product (its orders keep what was bought)',
        params: IdParam,
        response: { 200: S.ok() },
        errors: ['PRODUCT_NOT_FOUND'],
      },
    },
    async ({ params }) => {
      await store.deleteProduct(pathId(params.id));
      return done;
    },
  );
}

/** Admin: real-money payments recorded, and refunds. */
function adminPaymentRoutes(host: FastifyInstance, store: DbOrders, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.post(
    '/api/admin/payments',
    {
      config: { idempotent: 'transaction' },
      schema: {
        tags: admin,
        summary: 'Record a real-money payment: a `payment` order, its credits, a donation entry',
        description:
          '`credit` (credits added to the balance) defaults to `amount`; `currency` to the site currency. ' +
          'A paymentAPI + paymentID pair is recorded once (CONFLICT on a repeat), so a retried gateway callback cannot credit twice.',
        body: PaymentBody,
        response: { 201: OrderRow },
        errors: ['USER_NOT_FOUND', 'INVALID_AMOUNT', 'CONFLICT'],
      },
    },
    async (request, reply) => {
      const { body } = request;
      const amount = requireMoney(body.amount, 'INVALID_AMOUNT', 'amount');
      if (amount < 1) throw new DomainError('INVALID_AMOUNT', 'amount must be at least 0.01.');
      const credit = body.credit === undefined || body.credit === '' ? amount : requireMoney(body.credit, 'INVALID_AMOUNT', 'credit');
      const order = await store.recordPayment({
        username: body.username,
        amount,
        credit,
        currency: body.currency ?? settings.get().currency,
        paymentApi: body.paymentAPI ?? 'manual',
        paymentId: body.paymentID ? body.paymentID : null,
        keyName: request.apiKey?.name,
      });
      return reply.code(201).send(order);
    },
  );

  app.post(
    '/api/admin/store/orders/:id/refund',
    {
      config: { idempotent: 'transaction' },
      schema: {
        tags: admin,
        summary: 'Refund a purchase paid from the balance',
        description:
          'In one transaction: the price back to the balance, the cashback taken back, the stock restored, the roles it ' +
          'granted shortened or revoked, status `refunded`. A second refund is CONFLICT. A refund command that would carry a control ' +
          'character (a variable stored before they were refused) is refused with INVALID_VARIABLE, and nothing is refunded.',
        params: IdParam,
        response: { 200: OrderRow },
        errors: ['ORDER_NOT_FOUND', 'CONFLICT', 'INVALID_AMOUNT', 'INVALID_VARIABLE'],
      },
    },
    async (request) => store.refund(pathId(request.params.id), request.apiKey?.name),
  );
}

/** Admin: a product's purchase rules. */
function adminRuleRoutes(host: FastifyInstance, store: DbCatalogue): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get(
    '/api/admin/store/products/:id/rules',
    {
      schema: { tags: admin, summary: "A product's purchase rules", params: IdParam, response: { 200: RulesRow }, errors: ['PRODUCT_NOT_FOUND'] },
    },
    async (request) => rulesRow(await store.rulesOf(pathId(request.params.id))),
  );
  app.patch(
    '/api/admin/store/products/:id/rules',
    {
      schema: {
        tags: admin,
        summary: "Change a product's purchase rules",
        description: 'A buy breaking one is refused with REQUIRED_PRODUCT, REQUIRED_LINKED_ACCOUNT or DOWNGRADE_NOT_ALLOWED (400).',
        params: IdParam,
        body: RulesPatchBody,
        response: { 200: RulesRow },
        errors: ['PRODUCT_NOT_FOUND'],
      },
    },
    async (request) => {
      const b = request.body;
      return rulesRow(
        await store.setRules(pathId(request.params.id), {
          requiredProductId: b.requiredProductID === undefined ? undefined : Number(b.requiredProductID),
          requireLinkedAccount: optionalBool(b.requireLinkedAccount),
          preventDowngrade: optionalBool(b.preventDowngrade),
        }),
      );
    },
  );
}
