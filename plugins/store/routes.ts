/**
 * The store endpoints of api.md (listing, products, categories, buy, a user's orders) and its admin
 * API (decisions.md §8: the catalogue, purchase rules, real-money payments, refunds).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { sendJsonText } from '../../core/schema-compilers.ts';
import { PERMANENT, formatMoney, moneyNumber, now } from '../../core/format.ts';
import type * as S from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import { OrderRow } from './contract.ts';
import type { PricedProduct, RequestedLine } from './contract.ts';
import type { DbCatalogue } from './catalogue.ts';
import type { DbCheckout } from './checkout.ts';
import type { DbOrders } from './orders.ts';
import { ListingAnswers } from './listing.ts';
import { storeAdminRoutes } from './admin-routes.ts';
import {
  BuyBody,
  BuyResponse,
  PRICE_RULE,
  CategoryRow,
  CategoryTree,
  IdParam,
  ListingCategory,
  ListingQuery,
  ProductRow,
  categoryRow,
  productRow,
  treeRows,
  pathId,
} from './schemas.ts';

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
  else if (isPlainObject(raw))
    items = Object.values(raw); // `products[7][id]=…` with sparse keys
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
  storeAdminRoutes(app, catalogue, orders, settings);
}

/** A user's orders. */
function orderRoutes(host: FastifyInstance, store: DbOrders, users: UsersService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  // The game plugin's shop: it reads `error` into its enum (docs/clients.md).
  app.get(
    '/api/users/:userId/orders',
    {
      schema: {
        tags: ['store'],
        summary: "A user's orders, newest first; `<userId>` may also be a username",
        params: UserRefParams,
        response: { 200: Type.Array(OrderRow) },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => store.ordersOf((await users.requireByIdOrUsername(request.params.userId)).id),
  );
}

/** The catalogue as players and game servers read it: the in-game listing, products and categories. */
function catalogueRoutes(host: FastifyInstance, store: DbCatalogue, checkout: DbCheckout, users: UsersService, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  const listing = new ListingAnswers();
  app.get(
    '/api/store/listing',
    {
      config: { clientErrors: gamePlugin(), plainJson: true },
      schema: {
        tags,
        summary: 'Active categories nested with their active products, for the in-game shop',
        description:
          `A product's \`total\` is ${PRICE_RULE}. ` +
          'With `?username=`, `restricted` is true on products whose role that user already holds permanently ' +
          '(buying them again would change nothing). An unknown username is not an error: players without a web ' +
          'account still browse the shop, with nothing restricted.',
        querystring: ListingQuery,
        response: { 200: Type.Object({ categories: Type.Array(ListingCategory) }) },
      },
    },
    async ({ query: { username } }, reply) => {
      const permanentRoles = new Set<number>();
      const user = username ? await users.findByUsername(username) : undefined;
      if (user) {
        for (const role of await users.rolesOf(user.id)) if (role.expiryDate === PERMANENT) permanentRoles.add(role.id);
      }
      const { timezone, currency } = settings.get();
      const ctx = { timeZone: timezone, currency, at: now(), permanentRoles, unitPrice: (p: PricedProduct, at: string) => checkout.unitPrice(p, at) };
      return sendJsonText(reply, listing.answer(await store.tree({ activeOnly: true }), ctx));
    },
  );

  app.get(
    '/api/store/products',
    {
      schema: { tags, summary: 'Every product, active or not (see isActive)', response: { 200: Type.Array(ProductRow) } },
    },
    async () => {
      const { timezone } = settings.get();
      return (await store.products()).map((p) => productRow(p, timezone));
    },
  );

  app.get(
    '/api/store/products/:id',
    {
      schema: { tags, summary: 'One product', params: IdParam, response: { 200: ProductRow }, errors: ['PRODUCT_NOT_FOUND'] },
    },
    async ({ params }) => productRow(await store.requireProduct(pathId(params.id)), settings.get().timezone),
  );

  app.get(
    '/api/store/categories',
    {
      schema: { tags, summary: 'Every category, flat, active or not (see isActive)', response: { 200: Type.Array(CategoryRow) } },
    },
    async () => (await store.categories()).map(categoryRow),
  );

  app.get(
    '/api/store/categories/:id',
    {
      schema: {
        tags,
        summary: 'One category with its subcategories and products nested',
        params: IdParam,
        response: { 200: Type.Ref(CategoryTree) },
        errors: ['CATEGORY_NOT_FOUND'],
      },
    },
    async ({ params }) => {
      const { timezone } = settings.get();
      // tree() throws CATEGORY_NOT_FOUND unless the root exists.
      const [root] = treeRows(await store.tree({ activeOnly: false, rootId: pathId(params.id) }), (p) => productRow(p, timezone));
      return root!;
    },
  );
}

/** A buy with the credit balance. */
function buyRoute(host: FastifyInstance, store: DbCheckout, settings: SettingsService): void {
  const app = host.withTypeProvider<S.TypeBoxProvider>();
  app.post(
    '/api/store/buy',
    {
      // A key that may buy for players need not write anything else of the store.
      // The game plugin reads `error` into its enum; a product whose role is gone, or privileged, cannot be sold: the nearest is "no such product".
      config: {
        scopeAction: 'buy',
        idempotent: 'transaction',
        clientErrors: gamePlugin({ fields: { products: 'PRODUCT_NOT_FOUND' }, codes: { ROLE_NOT_FOUND: 'PRODUCT_NOT_FOUND', FORBIDDEN: 'PRODUCT_NOT_FOUND' } }),
      },
      schema: {
        tags,
        summary: 'Buy products with the credit balance',
        description:
          "HTTP 200 by default, the only success the official game plugin accepts; the site setting buyResponseStatus switches it to api.md's 201. " +
          'A product granting a privileged role (one that opens the staff console) is not for sale: FORBIDDEN, nothing charged. ' +
          `Each unit costs ${PRICE_RULE}. \`coupon\` and \`giftCard\` (with the promotions feature) take their share off; \`total\` is what the balance paid, ` +
          "`discount` what the sale, the product's own discount and the coupon took off (a gift card pays, it does not discount). " +
          'A code that does not apply is PROMOTION_INVALID; one whose last use or balance went to another buyer meanwhile is PROMOTION_USED_UP. ' +
          'Codes refused count per player and per API client (plugins.promotions.wrongCodes): past the limit, RATE_LIMITED until the window ends.',
        body: BuyBody,
        response: { 200: BuyResponse, 201: BuyResponse },
        errors: [
          'USER_NOT_FOUND',
          'PRODUCT_NOT_FOUND',
          'ROLE_NOT_FOUND',
          'INVALID_QUANTITY',
          'INVALID_VARIABLE',
          'OUT_OF_STOCK',
          'INSUFFICIENT_BALANCE',
          'REQUIRED_PRODUCT',
          'REQUIRED_LINKED_ACCOUNT',
          'DOWNGRADE_NOT_ALLOWED',
          'PROMOTION_INVALID',
          'PROMOTION_USED_UP',
          'RATE_LIMITED',
        ],
      },
    },
    async (request, reply) => {
      const { body } = request;
      const userID = String(body.userID).trim();
      if (!/^[0-9]{1,15}$/.test(userID)) throw new DomainError('VALIDATION_ERROR', 'userID must be a whole number');
      const codes = { coupon: body.coupon, giftCard: body.giftCard, sender: { address: request.ip, api: true } };
      const result = await store.buy(Number(userID), parseLines(body.products), request.apiKey?.name, codes);
      const orderID = String(result.orderId);
      return reply.code(settings.get().buyResponseStatus).send({
        status: true,
        orderID,
        credits: formatMoney(result.balance),
        products: result.lines.map((l) => ({ id: l.productId, quantity: l.quantity, variables: l.variables })),
        cashback: formatMoney(result.cashback),
        total: formatMoney(result.total),
        subtotal: formatMoney(result.subtotal),
        discount: formatMoney(result.discount),
        data: { orderID, credits: moneyNumber(result.balance) },
      });
    },
  );
}
