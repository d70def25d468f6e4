/** Shared set-up for the store tests: users with credits, roles and a catalogue, made through the API and services. */
import type { FastifyInstance } from 'fastify';
import { created, newUser } from '../../../test/fixtures.ts';
import { build, type TestLike } from '../../../test/helper.ts';
import { creditsRef } from '../../credits/contract.ts';
import { usersRef } from '../../users/contract.ts';

export const STORE_FEATURES = ['users', 'credits', 'store'];

export function storeApp(t: TestLike, features = STORE_FEATURES, config?: unknown): Promise<FastifyInstance> {
  return build(t, { features, config });
}

/** A user's id, with a balance (in cents) given through the credits service. */
export async function makeUser(app: FastifyInstance, username: string, cents = 0): Promise<number> {
  return (await newUser(app, username, { cents })).id;
}

export function balanceOf(app: FastifyInstance, userId: number): Promise<number> {
  return app.services.get(creditsRef).balance(userId);
}

export async function makeRole(app: FastifyInstance, name: string): Promise<number> {
  return Number((await created(app, '/api/admin/roles', { name }, 'json')).id);
}

export async function makeCategory(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/categories', body, 'json')).id);
}

export async function makeProduct(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/products', body, 'json')).id);
}

/** Everything a failed buy must leave untouched, to compare before and after. */
export async function snapshot(app: FastifyInstance, userId: number) {
  const users = app.services.get(usersRef);
  return {
    balance: await balanceOf(app, userId),
    roles: await users.rolesOf(userId),
    stock: await app.db.query('select id, stock from store_products order by id'),
    orders: await app.db.query('select id from store_orders'),
    items: await app.db.query('select id from store_order_items'),
  };
}
