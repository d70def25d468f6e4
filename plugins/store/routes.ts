/**
 * The store endpoints of api.md (listing, products, categories, buy, a user's orders) and its admin
 * API (decisions.md §8: the catalogue, purchase rules, real-money payments, refunds).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, formatMoney, moneyNumber, now, requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import { OrderRow } from './contract.ts';
import type { PricedProduct, Product, RequestedLine } from './contract.ts';
import type { DbCatalogue } from './catalogue.ts';
import type { DbCheckout } from './checkout.ts';
import type { DbOrders } from './orders.ts';
import {
  BuyBody, BuyResponse, PRICE_RULE, CategoryCreateBody, CategoryPatchBody, CategoryRow, CategoryTree, IdParam, ListingCategory, ListingQuery,
  PaymentBody, ProductCreateBody, ProductPatchBody, ProductRow, ReorderBody, RulesPatchBody, RulesRow,
  categoryInput, categoryRow, listingProduct, optionalBool, productInput, productRow, rulesRow, treeRows,
} from './schemas.ts';

/** A path id: anything that is not a plain number names nothing (a not-found error, not a validation error). */
function pathId(id: string): number {
  return /^[0-9]{1,15}$/.test(id) ? Number(id) : 0;
}

/** The most units of one line, and the most lines in one order (decisions.md §5). */
const MAX_QUANTITY = 100;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The `products` field in every form clients send it (decisions.md §5): ids (`products[]=5`,
 * repeated keys, a single value) or objects with id, quantity and variables.
 */
function parseLines(raw: unknown): RequestedLine[] {
  let items: unknown[];
  if (Array.isArray(raw)) items = raw;
  else if (isPlainObject(raw) && 'id' in raw) items = [raw];
  else if (isPlainObject(raw)) items = Object.values(raw); // `products[7][id]=…` with sparse keys
  else if (raw === undefined || raw === null || raw === '') items = [];
  else items = [raw];
  if (items.length === 0) throw new DomainError('VALIDATION_ERROR', 'products is required: send at least one product ID.');
  if (items.length > MAX_QUANTITY) throw new DomainError('VALIDATION_ERROR', `products: at most ${MAX_QUANTITY} lines in one order.`);
  return items.map((item, i) => {
    const obj = isPlainObject(item) ? item : { id: item };
    if (obj.id === undefined || isPlainObject(obj.id) || Array.isArray(obj.id)) {
      throw new DomainError('VALIDATION_ERROR', `products[${i}].id is required`);
    }
    const sentId = String(obj.id).trim();
    return {
      sentId,
      productId: /^[0-9]{1,15}$/.test(sentId) ? Number(sentId) : 0,
      quantity: parseQuantity(obj.quantity),
      variables: parseVariables(obj.variables, sentId),
    };
  });
}

function parseQuantity(value: unknown): number {
  if (value === undefined || value === null || value === '') return 1;
  const text = String(value).trim();
  const n = /^[0-9]{1,4}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_QUANTITY)) {
    throw new DomainError('INVALID_QUANTITY', `quantity must be a whole number from 1 to ${MAX_QUANTITY} (got "${text.slice(0, 20)}").`);
  }
  return n;
}

function parseVariables(value: unknown, productId: string): Map<string, string> {
  const out = new Map<string, string>();
  if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) return out;
  if (!isPlainObject(value)) {
    throw new DomainError('INVALID_VARIABLE', `Invalid variables for product ${productId}: send them as variables[name]=value.`);
  }
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string' && typeof v !== 'number') {
      throw new DomainError('INVALID_VARIABLE', `Invalid value of variable "${name}" for product ${productId}.`);
    }
    out.set(name, String(v));
  }
  return out;
}

const tags = ['store'];
const admin = ['admin'];
const done = { status: true as const };

/** The store's three parts, each route group using the one it needs. */
export interface StoreParts {
  catalogue: DbCatalogue;
  checkout: DbCheckout;
  orders: DbOrders;
}

export function storeRoutes(app: FastifyInstance, { catalogue, checkout, orders }: StoreParts, users: UsersService, settings: SettingsService): void {
  // Shared, so its recursive reference to itself resolves in the serializer and the document.
  app.addSchema(CategoryTree);
  orderRoutes(app, orders, users);
  catalogueRoutes(app, catalogue, checkout, users, settings);
  buyRoute(app, checkout, settings);
  adminCategoryRoutes(app, catalogue);
  adminProductRoutes(app, catalogue, settings);
  adminPaymentRoutes(app, orders, settings);
  adminRuleRoutes(app, catalogue);
}

/** A user's orders. */
function orderRoutes(host: FastifyInstance, store: DbOrders, users: UsersService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  // The game plugin's shop: it reads `error` into its enum (docs/clients.md).
  app.get('/api/users/:userId/orders', {
    schema: {
      tags: ['store'], summary: 'A user\'s orders, newest first; `<userId>` may also be a username', params: UserRefParams,
      response: { 200: Type.Array(OrderRow) }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => store.ordersOf((await users.requireByIdOrUsername(request.params.userId)).id));
}

/** The catalogue as players and game servers read it: the in-game listing, products and categories. */
function catalogueRoutes(host: FastifyInstance, store: DbCatalogue, checkout: DbCheckout, users: UsersService, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get('/api/store/listing', {
    config: { clientErrors: gamePlugin(), plainJson: true },
    schema: {
      tags, summary: 'Active categories nested with their active products, for the in-game shop',
      description: `A product's \`total\` is ${PRICE_RULE}. `
        + 'With `?username=`, `restricted` is true on products whose role that user already holds permanently '
        + '(buying them again would change nothing). An unknown username is not an error: players without a web '
        + 'account still browse the shop, with nothing restricted.',
      querystring: ListingQuery,
      response: { 200: Type.Object({ categories: Type.Array(ListingCategory) }) },
    },
  }, async ({ query: { username } }) => {
    const permanentRoles = new Set<number>();
    const user = username ? await users.findByUsername(username) : undefined;
    if (user) {
      for (const role of await users.rolesOf(user.id)) if (role.expiryDate === PERMANENT) permanentRoles.add(role.id);
    }
    const { timezone, currency } = settings.get();
    const ctx = { timeZone: timezone, currency, at: now(), permanentRoles, unitPrice: (p: PricedProduct, at: string) => checkout.unitPrice(p, at) };
    return { categories: treeRows(await store.tree({ activeOnly: true }), (p) => listingProduct(p, ctx)) };
  });

  app.get('/api/store/products', {
    schema: { tags, summary: 'Every product, active or not (see isActive)', response: { 200: Type.Array(ProductRow) } },
  }, async () => {
    const { timezone } = settings.get();
    return (await store.products()).map((p) => productRow(p, timezone));
  });

  app.get('/api/store/products/:id', {
    schema: { tags, summary: 'One product', params: IdParam, response: { 200: ProductRow }, errors: ['PRODUCT_NOT_FOUND'] },
  }, async ({ params }) => productRow(await store.requireProduct(pathId(params.id)), settings.get().timezone));

  app.get('/api/store/categories', {
    schema: { tags, summary: 'Every category, flat, active or not (see isActive)', response: { 200: Type.Array(CategoryRow) } },
  }, async () => (await store.categories()).map(categoryRow));

  app.get('/api/store/categories/:id', {
    schema: { tags, summary: 'One category with its subcategories and products nested', params: IdParam, response: { 200: Type.Ref(CategoryTree) },
      errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ params }) => {
    const { timezone } = settings.get();
    // tree() throws CATEGORY_NOT_FOUND unless the root exists.
    const [root] = treeRows(await store.tree({ activeOnly: false, rootId: pathId(params.id) }), (p) => productRow(p, timezone));
    return root!;
  });
}

/** A buy with the credit balance. */
function buyRoute(host: FastifyInstance, store: DbCheckout, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.post('/api/store/buy', {
    // A key that may buy for players need not write anything else of the store.
    // The game plugin reads `error` into its enum; a product whose role is gone, or privileged, cannot be sold: the nearest is "no such product".
    config: { scopeAction: 'buy', idempotent: 'transaction', clientErrors: gamePlugin({ fields: { products: 'PRODUCT_NOT_FOUND' },
      codes: { ROLE_NOT_FOUND: 'PRODUCT_NOT_FOUND', FORBIDDEN: 'PRODUCT_NOT_FOUND' } }) },
    schema: {
      tags, summary: 'Buy products with the credit balance',
      description: 'HTTP 200 by default, the only success the official game plugin accepts; the site setting buyResponseStatus switches it to api.md\'s 201. '
        + 'A product granting a privileged role (one that opens the staff console) is not for sale: FORBIDDEN, nothing charged. '
        + `Each unit costs ${PRICE_RULE}. \`coupon\` and \`giftCard\` (with the promotions feature) take their share off; \`total\` is what the balance paid, `
        + '`discount` what the sale, the product\'s own discount and the coupon took off (a gift card pays, it does not discount). '
        + 'A code that does not apply is PROMOTION_INVALID; one whose last use or balance went to another buyer meanwhile is PROMOTION_USED_UP. '
        + 'Codes refused count per player and per API client (plugins.promotions.wrongCodes): past the limit, RATE_LIMITED until the window ends.',
      body: BuyBody,
      response: { 200: BuyResponse, 201: BuyResponse },
      errors: [
        'USER_NOT_FOUND', 'PRODUCT_NOT_FOUND', 'ROLE_NOT_FOUND', 'INVALID_QUANTITY', 'INVALID_VARIABLE', 'OUT_OF_STOCK', 'INSUFFICIENT_BALANCE',
        'REQUIRED_PRODUCT', 'REQUIRED_LINKED_ACCOUNT', 'DOWNGRADE_NOT_ALLOWED', 'PROMOTION_INVALID', 'PROMOTION_USED_UP', 'RATE_LIMITED',
      ],
    },
  }, async (request, reply) => {
    const { body } = request;
    const userID = String(body.userID).trim();
    if (!/^[0-9]{1,15}$/.test(userID)) throw new DomainError('VALIDATION_ERROR', 'userID must be a whole number');
    const codes = { coupon: body.coupon, giftCard: body.giftCard, sender: { address: request.ip, api: true } };
    const result = await store.buy(Number(userID), parseLines(body.products), request.apiKey?.name, codes);
    const orderID = String(result.orderId);
    return reply.code(settings.get().buyResponseStatus).send({
      status: true, orderID, credits: formatMoney(result.balance),
      products: result.lines.map((l) => ({ id: l.productId, quantity: l.quantity, variables: l.variables })),
      cashback: formatMoney(result.cashback), total: formatMoney(result.total),
      subtotal: formatMoney(result.subtotal), discount: formatMoney(result.discount),
      data: { orderID, credits: moneyNumber(result.balance) },
    });
  });
}

/** Admin: the store's categories. */
function adminCategoryRoutes(host: FastifyInstance, store: DbCatalogue): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get('/api/admin/store/categories', {
    schema: { tags: admin, summary: 'Store categories, flat', response: { 200: Type.Array(CategoryRow) } },
  }, async () => (await store.categories()).map(categoryRow));
  app.post('/api/admin/store/categories', {
    schema: { tags: admin, summary: 'Create a store category', body: CategoryCreateBody, response: { 201: CategoryRow }, errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ body }, reply) => reply.code(201).send(categoryRow(await store.createCategory({ ...categoryInput(body), name: body.name }))));
  app.post('/api/admin/store/categories/reorder', {
    schema: { tags: admin, summary: 'Order categories: each listed one gets its place in the list as priority', body: ReorderBody, response: { 200: S.ok() },
      errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ body }) => {
    await store.reorder('categories', body.ids);
    return done;
  });
  app.get('/api/admin/store/categories/:id', {
    schema: { tags: admin, summary: 'One store category', params: IdParam, response: { 200: CategoryRow }, errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ params }) => categoryRow(await store.requireCategory(pathId(params.id))));
  app.patch('/api/admin/store/categories/:id', {
    schema: { tags: admin, summary: 'Change, move or deactivate a store category', params: IdParam, body: CategoryPatchBody, response: { 200: CategoryRow },
      errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ params, body }) => categoryRow(await store.updateCategory(pathId(params.id), categoryInput(body))));
  app.delete('/api/admin/store/categories/:id', {
    schema: { tags: admin, summary: 'Delete an empty store category (CONFLICT while it holds subcategories or products)', params: IdParam,
      response: { 200: S.ok() },
      errors: ['CATEGORY_NOT_FOUND', 'CONFLICT'],
    },
  }, async ({ params }) => {
    await store.deleteCategory(pathId(params.id));
    return done;
  });
}

/** Admin: the store's products. */
function adminProductRoutes(host: FastifyInstance, store: DbCatalogue, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  const tz = () => settings.get().timezone;
  const showProduct = (p: Product) => productRow(p, tz());
  const NEVER_SOLD = 'A product never grants a privileged role (one that opens the staff console, or that a feature marks privileged): '
    + 'such a `giveRoleID` is a VALIDATION_ERROR naming it, and a product saved before its role became privileged cannot be bought (FORBIDDEN).';
  app.get('/api/admin/store/products', {
    schema: { tags: admin, summary: 'Products with their variables', response: { 200: Type.Array(ProductRow) } },
  }, async () => (await store.products()).map(showProduct));
  app.post('/api/admin/store/products', {
    schema: {
      tags: admin, summary: 'Create a product', description: NEVER_SOLD, body: ProductCreateBody, response: { 201: ProductRow },
      errors: ['VALIDATION_ERROR', 'CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'],
    },
  }, async ({ body }, reply) => {
    const input = productInput(body, tz());
    const product = await store.createProduct({ ...input, categoryId: body.categoryID, name: body.name, price: input.price! });
    return reply.code(201).send(showProduct(product));
  });
  app.post('/api/admin/store/products/reorder', {
    schema: { tags: admin, summary: 'Order products: each listed one gets its place in the list as priority', body: ReorderBody, response: { 200: S.ok() },
      errors: ['PRODUCT_NOT_FOUND'] },
  }, async ({ body }) => {
    await store.reorder('products', body.ids);
    return done;
  });
  app.get('/api/admin/store/products/:id', {
    schema: { tags: admin, summary: 'One product', params: IdParam, response: { 200: ProductRow }, errors: ['PRODUCT_NOT_FOUND'] },
  }, async ({ params }) => showProduct(await store.requireProduct(pathId(params.id))));
  app.patch('/api/admin/store/products/:id', {
    schema: {
      tags: admin, summary: 'Change or deactivate a product; `variables`, when sent, replaces the list', description: NEVER_SOLD, params: IdParam,
      body: ProductPatchBody,
      response: { 200: ProductRow }, errors: ['VALIDATION_ERROR', 'PRODUCT_NOT_FOUND', 'CATEGORY_NOT_FOUND', 'ROLE_NOT_FOUND'],
    },
  }, async ({ params, body }) => showProduct(await store.updateProduct(pathId(params.id), productInput(body, tz()))));
  app.delete('/api/admin/store/products/:id', {
    schema: { tags: admin, summary: 'Delete a product (its orders keep what was bought)', params: IdParam, response: { 200: S.ok() },
      errors: ['PRODUCT_NOT_FOUND'] },
  }, async ({ params }) => {
    await store.deleteProduct(pathId(params.id));
    return done;
  });
}

/** Admin: real-money payments recorded, and refunds. */
function adminPaymentRoutes(host: FastifyInstance, store: DbOrders, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.post('/api/admin/payments', {
    config: { idempotent: 'transaction' },
    schema: {
      tags: admin, summary: 'Record a real-money payment: a `payment` order, its credits, a donation entry',
      description: '`credit` (credits added to the balance) defaults to `amount`; `currency` to the site currency. '
        + 'A paymentAPI + paymentID pair is recorded once (CONFLICT on a repeat), so a retried gateway callback cannot credit twice.',
      body: PaymentBody, response: { 201: OrderRow }, errors: ['USER_NOT_FOUND', 'INVALID_AMOUNT', 'CONFLICT'],
    },
  }, async (request, reply) => {
    const { body } = request;
    const amount = requireMoney(body.amount, 'INVALID_AMOUNT', 'amount');
    if (amount < 1) throw new DomainError('INVALID_AMOUNT', 'amount must be at least 0.01.');
    const credit = body.credit === undefined || body.credit === '' ? amount : requireMoney(body.credit, 'INVALID_AMOUNT', 'credit');
    const order = await store.recordPayment({
      username: body.username, amount, credit, currency: body.currency ?? settings.get().currency,
      paymentApi: body.paymentAPI ?? 'manual', paymentId: body.paymentID ? body.paymentID : null, keyName: request.apiKey?.name,
    });
    return reply.code(201).send(order);
  });

  app.post('/api/admin/store/orders/:id/refund', {
    config: { idempotent: 'transaction' },
    schema: {
      tags: admin, summary: 'Refund a purchase paid from the balance',
      description: 'In one transaction: the price back to the balance, the cashback taken back, the stock restored, the roles it '
        + 'granted shortened or revoked, status `refunded`. A second refund is CONFLICT. A refund command that would carry a control '
        + 'character (a variable stored before they were refused) is refused with INVALID_VARIABLE, and nothing is refunded.',
      params: IdParam, response: { 200: OrderRow }, errors: ['ORDER_NOT_FOUND', 'CONFLICT', 'INVALID_AMOUNT', 'INVALID_VARIABLE'],
    },
  }, async (request) => store.refund(pathId(request.params.id), request.apiKey?.name));
}

/** Admin: a product's purchase rules. */
function adminRuleRoutes(host: FastifyInstance, store: DbCatalogue): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.get('/api/admin/store/products/:id/rules', {
    schema: { tags: admin, summary: 'A product\'s purchase rules', params: IdParam, response: { 200: RulesRow }, errors: ['PRODUCT_NOT_FOUND'] },
  }, async (request) => rulesRow(await store.rulesOf(pathId(request.params.id))));
  app.patch('/api/admin/store/products/:id/rules', {
    schema: {
      tags: admin, summary: 'Change a product\'s purchase rules',
      description: 'A buy breaking one is refused with REQUIRED_PRODUCT, REQUIRED_LINKED_ACCOUNT or DOWNGRADE_NOT_ALLOWED (400).',
      params: IdParam, body: RulesPatchBody, response: { 200: RulesRow }, errors: ['PRODUCT_NOT_FOUND'],
    },
  }, async (request) => {
    const b = request.body;
    return rulesRow(await store.setRules(pathId(request.params.id), {
      requiredProductId: b.requiredProductID === undefined ? undefined : Number(b.requiredProductID),
      requireLinkedAccount: optionalBool(b.requireLinkedAccount), preventDowngrade: optionalBool(b.preventDowngrade),
    }));
  });
}
