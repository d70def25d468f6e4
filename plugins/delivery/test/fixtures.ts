/**
 * Shared set-up for the delivery tests: players with credits, roles and products to buy (made
 * through the users, credits and store features' services and API), a game server and product commands.
 */
import type { FastifyInstance } from 'fastify';
import { created } from '../../../test/fixtures.ts';
import { ADMIN_KEY, JAVA_AGENT, call } from '../../../test/helper.ts';
import { deliveryRef } from '../contract.ts';
import type { DbDeliveryService } from '../service.ts';

export const DELIVERY_FEATURES = ['users', 'credits', 'store', 'delivery'];

export { balanceOf, makeCategory, makeProduct, makeRole, makeUser } from '../../../test/fixtures.ts';

export async function makeServer(app: FastifyInstance, name = 'Survival'): Promise<{ id: string; token: string }> {
  const server = await created(app, '/api/admin/delivery/servers', { name }, 'json');
  return { id: String(server.id), token: String(server.token) };
}

export function addCommand(app: FastifyInstance, productId: number, body: Record<string, unknown>): Promise<Record<string, any>> {
  return created(app, `/api/admin/store/products/${productId}/commands`, body, 'json');
}

/** The official plugin's queue poll: a GET that still carries the form content type of its HTTP client. */
export function pollQueue(app: FastifyInstance, token: string) {
  return app.inject({
    method: 'GET',
    url: `/api/command-logs/${token}/queue`,
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': JAVA_AGENT },
  });
}

/** The official plugin's validate: urlencoded, bracket keys not percent-encoded. */
export function validate(app: FastifyInstance, token: string, ids: string[]) {
  const payload = [`token=${encodeURIComponent(token)}`, ...ids.map((id, i) => `commands[${i}]=${id}`)].join('&');
  return app.inject({
    method: 'POST',
    url: '/api/command-logs/validate',
    payload,
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded', 'user-agent': JAVA_AGENT },
  });
}

export const buy = (app: FastifyInstance, body: Record<string, unknown>) => call(app, '/api/store/buy', { body, as: 'json' });

/**
 * Counts, from now on, the rounds of one of the background's repeated works (it calls this service
 * method each round: the lease sweep, the wake-up for other instances' work), so a test waits for
 * rounds to have run rather than for a duration.
 */
export function backgroundRounds(app: FastifyInstance, work: 'expireLeases' | 'wakeForOthers'): () => number {
  const service: Record<typeof work, () => Promise<unknown>> = app.services.get(deliveryRef) as DbDeliveryService;
  const round = service[work].bind(service);
  let ended = 0;
  service[work] = () =>
    round().finally(() => {
      ended++;
    });
  return () => ended;
}
