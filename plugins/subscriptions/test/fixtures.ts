/**
 * Shared set-up for the subscriptions tests: a product sold as a monthly subscription with a role,
 * a game server and the product's commands (through the store, delivery and users features' API),
 * players with a balance, and reads of what a period left behind (ledger rows, queued commands).
 */
import type { FastifyInstance } from 'fastify';
import type { TestClock } from '../../../core/clock.ts';
import { created, makeCategory, makeProduct, makeRole } from '../../../test/fixtures.ts';
import { build, call, QUIET_ROUNDS, type TestLike } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { subscriptionsRef } from '../contract.ts';
import { fields, sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry } from '../../credits/entities.ts';
import { DeliveryQueue } from '../../delivery/entities.ts';

export const SUBSCRIPTION_FEATURES = ['users', 'credits', 'store', 'delivery', 'subscriptions'];
export { balanceOf, makeUser, until } from '../../../test/fixtures.ts';

export const DAY = 86_400_000;
export const GRACE_HOURS = 48;

/** An app whose sweep runs every `sweepMs` (by default far apart: a test sweeps when it means to). */
export async function subscriptionsApp(
  t: TestLike,
  opts: {
    clock?: TestClock;
    databaseUrl?: string;
    sweepMs?: number;
    features?: string[];
    env?: Record<string, string>;
    /** Other features' options, by feature. */
    config?: Record<string, Record<string, unknown>>;
  } = {},
): Promise<FastifyInstance> {
  return build(t, {
    features: [...SUBSCRIPTION_FEATURES, ...(opts.features ?? [])],
    clock: opts.clock,
    databaseUrl: opts.databaseUrl,
    env: opts.env,
    config: {
      plugins: {
        // Two instances on one database: the other features' background rounds stay out of the way.
        ...(opts.databaseUrl ? QUIET_ROUNDS : {}),
        subscriptions: { graceHours: GRACE_HOURS, sweepMs: opts.sweepMs ?? 3_600_000 },
        ...opts.config,
      },
    },
  });
}

/** A VIP product sold monthly at 5.00 with the VIP role, and its purchase, renewal and expiry commands on a game server. */
export async function vipPlan(app: FastifyInstance, plan: Record<string, unknown> = {}): Promise<{ productId: number; roleId: number; planId: number }> {
  const roleId = await makeRole(app, 'VIP');
  const category = await makeCategory(app, { name: 'Ranks' });
  const productId = await makeProduct(app, { categoryID: category, name: 'VIP', price: '9' });
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Survival' }, 'json');
  for (const [trigger, command] of [
    ['purchase', 'lp user {username} parent add vip'],
    ['renewal', 'say {username} renewed VIP'],
    ['expiry', 'lp user {username} parent remove vip'],
  ])
    await created(app, `/api/admin/store/products/${productId}/commands`, { serverID: server.id, trigger, command }, 'json');
  const row = await created(
    app,
    '/api/admin/subscription-plans',
    { productID: productId, intervalUnit: 'months', price: '5.00', roleID: roleId, renewWith: 'renewal', ...plan },
    'json',
  );
  return { productId, roleId, planId: Number(row.id) };
}

export const subscribe = (app: FastifyInstance, userId: number, productId: number) =>
  call(app, '/api/subscriptions', { body: { userID: userId, productID: productId }, as: 'json' });

export const sweep = (app: FastifyInstance) => app.services.get(subscriptionsRef).sweep();

export async function subscriptionOf(app: FastifyInstance, id: string | number): Promise<Record<string, any>> {
  const res = await call(app, `/api/admin/subscriptions/${id}`);
  if (res.statusCode !== 200) throw new Error(`subscription ${id}: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** The ledger rows of one reason for a user, oldest first: amounts in cents. */
export async function ledger(app: FastifyInstance, userId: number, reason: string): Promise<number[]> {
  const L = CreditsLedgerEntry.c;
  const rows = await app.db.query(
    sql`select ${fields({ delta: L.delta })} from ${CreditsLedgerEntry} where ${L.userId} = ${userId} and ${L.reason} = ${reason} order by ${L.id}`,
  );
  return rows.map((r) => Number(r.delta));
}

/** The commands queued for a user, in order. */
export async function commands(app: FastifyInstance, userId: number): Promise<string[]> {
  const rows = await app.db.query(
    sql`select ${fields({ command: DeliveryQueue.c.command })} from ${DeliveryQueue} where ${DeliveryQueue.c.userId} = ${userId} order by ${DeliveryQueue.c.id}`,
  );
  return rows.map((r) => r.command);
}

/** The roles a user holds now (expired ones left out, as the users feature shows them), by id, with their expiry. */
export async function roles(app: FastifyInstance, userId: number): Promise<Map<number, string>> {
  return new Map((await app.services.get(usersRef).rolesOf(userId)).map((r) => [r.id, r.expiryDate]));
}
