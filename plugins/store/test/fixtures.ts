/** Shared set-up for the store and donations tests: users, credits, roles and a catalogue, made through the API and services. */
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { creditsRef } from '../../credits/contract.ts';
import { usersRef } from '../../users/contract.ts';

export const STORE_FEATURES = ['users', 'credits', 'store'];

type TestLike = Parameters<typeof build>[0];

export function storeApp(t: TestLike, features = STORE_FEATURES, config?: unknown): Promise<FastifyInstance> {
  return build(t, { features, config });
}

/** A user with a balance (in cents) given through the credits service. */
export async function makeUser(app: FastifyInstance, username: string, cents = 0): Promise<number> {
  const user = await app.services.get(usersRef).createAccount({ username, email: `${username}@example.com`, creationIP: '10.0.0.1' });
  if (cents > 0) await app.services.get(creditsRef).change(user.id, cents, { reason: 'test' });
  return user.id;
}

export function balanceOf(app: FastifyInstance, userId: number): Promise<number> {
  return app.services.get(creditsRef).balance(userId);
}

async function created(app: FastifyInstance, url: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await call(app, url, { body, as: 'json' });
  if (res.statusCode !== 201) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

export async function makeRole(app: FastifyInstance, name: string): Promise<number> {
  return Number((await created(app, '/api/admin/roles', { name })).id);
}

export async function makeCategory(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/categories', body)).id);
}

export async function makeProduct(app: FastifyInstance, body: Record<string, unknown>): Promise<number> {
  return Number((await created(app, '/api/admin/store/products', body)).id);
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
