/** Shared set-up for the store tests: users with credits, roles and a catalogue, made through the API and services. */
import type { FastifyInstance } from 'fastify';
import { balanceOf } from '../../../test/fixtures.ts';
import { build, type TestLike } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { fields, sql } from '../../../core/sql.ts';
import { StoreOrder, StoreOrderItem, StoreProduct } from '../entities.ts';

const P = StoreProduct.c;

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
    stock: await app.db.query(sql`select ${fields({ id: P.id, stock: P.stock })} from ${StoreProduct} order by ${P.id}`),
    orders: await app.db.query(sql`select ${fields({ id: StoreOrder.c.id })} from ${StoreOrder}`),
    items: await app.db.query(sql`select ${fields({ id: StoreOrderItem.c.id })} from ${StoreOrderItem}`),
  };
}
