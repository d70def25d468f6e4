/** Shared set-up for the store tests: users with credits, roles and a catalogue, made through the API and services. */
import type { FastifyInstance } from 'fastify';
import { balanceOf } from '../../../test/fixtures.ts';
import { build, type TestLike } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';

export const STORE_FEATURES = ['users', 'credits', 'store'];

export function storeApp(t: TestLike, features = STORE_FEATURES, config?: unknown): Promise<FastifyInstance> {
  return build(t, { features, config });
}

export { balanceOf, makeCategory, makeProduct, makeRole, makeUser } from '../../../test/fixtures.ts';

/** Everything a failed buy must leave untouched, to compare before and after. */
export async function snapshot(app: FastifyInstance, userId: number) {
  const users = app.services.get(usersRef);
  return {
    balance: await balanceOf(app, userId),
    roles: await users.rolesOf(userId),
    stock: await app.db.unchecked.query('select id, stock from store_products order by id'),
    orders: await app.db.unchecked.query('select id from store_orders'),
    items: await app.db.unchecked.query('select id from store_order_items'),
  };
}
