/** The store endpoints of api.md: listing, products, categories, buy. */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, formatMoney, moneyNumber, now } from '../../core/format.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import { OrderRow } from './contract.ts';
import type { Catalogue } from './catalogue.ts';
import type { Rules } from './rules.ts';
import type { Orders } from './orders.ts';
import { categoryRow, listingProduct, productRow, treeRows } from './rows.ts';
import { BuyBody, BuyResponse, CategoryRow, CategoryTree, IdParam, ListingCategory, ListingQuery, ProductRow } from './schemas.ts';

export interface StoreDeps {
  catalogue: Catalogue;
  orders: Orders;
  rules: Rules;
  users: UsersService;
  settings: SettingsService;
}

/** A path id: anything that is not a plain number names nothing (a not-found error, not a validation error). */
export function pathId(id: string): number {
  return /^[0-9]{1,15}$/.test(id) ? Number(id) : 0;
}

const tags = ['store'];

export async function storeRoutes(host: FastifyInstance, { catalogue, orders, users, settings }: StoreDeps): Promise<void> {
  const app = host.withTypeProvider<TypeBoxProvider>();
  // Shared, so its recursive reference to itself resolves in the serializer and the document.
  app.addSchema(CategoryTree);
  // The game plugin's shop: it reads `error` into its enum (docs/clients.md).
  app.get('/api/users/:userId/orders', {
    schema: {
      tags: ['store'], summary: 'A user\'s orders, newest first; `<userId>` may also be a username', params: UserRefParams,
      response: { 200: Type.Array(OrderRow) }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => orders.ordersOf((await users.requireByIdOrUsername(request.params.userId)).id));

  app.get('/api/store/listing', {
    config: { clientErrors: gamePlugin() },
    schema: {
      tags, summary: 'Active categories nested with their active products, for the in-game shop',
      description: 'With `?username=`, `restricted` is true on products whose role that user already holds permanently '
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
    const ctx = { timeZone: timezone, currency, at: now(), permanentRoles };
    return { categories: treeRows(await catalogue.tree({ activeOnly: true }), (p) => listingProduct(p, ctx)) };
  });

  app.get('/api/store/products', {
    schema: { tags, summary: 'Every product, active or not (see isActive)', response: { 200: Type.Array(ProductRow) } },
  }, async () => {
    const { timezone } = settings.get();
    return (await catalogue.products()).map((p) => productRow(p, timezone));
  });

  app.get('/api/store/products/:id', {
    schema: { tags, summary: 'One product', params: IdParam, response: { 200: ProductRow }, errors: ['PRODUCT_NOT_FOUND'] },
  }, async ({ params }) => productRow(await catalogue.requireProduct(pathId(params.id)), settings.get().timezone));

  app.get('/api/store/categories', {
    schema: { tags, summary: 'Every category, flat, active or not (see isActive)', response: { 200: Type.Array(CategoryRow) } },
  }, async () => (await catalogue.categories()).map(categoryRow));

  app.get('/api/store/categories/:id', {
    schema: { tags, summary: 'One category with its subcategories and products nested', params: IdParam, response: { 200: Type.Ref(CategoryTree) }, errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ params }) => {
    const { timezone } = settings.get();
    // tree() throws CATEGORY_NOT_FOUND unless the root exists.
    const [root] = treeRows(await catalogue.tree({ activeOnly: false, rootId: pathId(params.id) }), (p) => productRow(p, timezone));
    return root!;
  });

  app.post('/api/store/buy', {
    // A key that may buy for players need not write anything else of the store.
    // The game plugin reads `error` into its enum; a product whose role is gone cannot be sold: the nearest is "no such product".
    config: { scopeAction: 'buy', clientErrors: gamePlugin({ fields: { products: 'PRODUCT_NOT_FOUND' }, codes: { ROLE_NOT_FOUND: 'PRODUCT_NOT_FOUND' } }) },
    schema: {
      tags, summary: 'Buy products with the credit balance',
      description: 'HTTP 200 by default, the only success the official game plugin accepts; the site setting buyResponseStatus switches it to api.md\'s 201.',
      body: BuyBody,
      response: { 200: BuyResponse, 201: BuyResponse },
      errors: [
        'USER_NOT_FOUND', 'PRODUCT_NOT_FOUND', 'ROLE_NOT_FOUND', 'INVALID_QUANTITY', 'INVALID_VARIABLE', 'OUT_OF_STOCK', 'INSUFFICIENT_BALANCE',
        'REQUIRED_PRODUCT', 'REQUIRED_LINKED_ACCOUNT', 'DOWNGRADE_NOT_ALLOWED',
      ],
    },
  }, async (request, reply) => {
    const { body } = request;
    const userID = String(body.userID).trim();
    if (!/^[0-9]{1,15}$/.test(userID)) throw new DomainError('VALIDATION_ERROR', 'userID must be a whole number');
    const result = await orders.buy(Number(userID), body.products, request.apiKey?.name);
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
