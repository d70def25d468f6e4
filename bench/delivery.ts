/**
 * `delivery/plugin-queue`: the official game plugin's HTTP mode polls
 * `GET /api/command-logs/<token>/queue` every few seconds from every game server. Here one server
 * with 200 commands waiting (bought through the store) is polled as fast as it answers. The
 * baseline does the same reads: the server by its token's hash, its waiting rows.
 */
import { createHash } from 'node:crypto';
import type { BaseDb } from './base-db.ts';
import { Api, type Scenario } from './scenario.ts';

const WAITING = 200;

export const scenarios: Scenario[] = [{
  name: 'delivery/plugin-queue',
  readOnly: true,
  async seed(api: Api) {
    const server = await api.send('POST', '/api/admin/delivery/servers', { name: 'Survival' }) as { id: string; token: string };
    const categoryID = await api.create('/api/admin/store/categories', { name: 'Ranks' });
    const productID = await api.create('/api/admin/store/products', { categoryID, name: 'VIP', price: '1.00' });
    await api.send('POST', `/api/admin/store/products/${productID}/commands`, { serverID: server.id, command: 'lp user {username} parent add vip', trigger: 'purchase' });
    const buyer = await api.player(5000, 'collector', 1_000_00);
    await Api.batched(WAITING, 10, () => api.send('POST', '/api/store/buy', { userID: buyer, products: [{ id: productID }] }));
    return [{ method: 'GET', path: `/api/command-logs/${server.token}/queue` }];
  },
  baseline: {
    method: 'GET',
    url: '/api/command-logs/:token/queue',
    async handler(db: BaseDb, request, reply) {
      const token = (request.params as { token: string }).token;
      const [server] = await db.all('select id from delivery_servers where token_hash = ? and is_active = 1', [createHash('sha256').update(token).digest('hex')]);
      if (!server) return reply.code(404).send({ status: false, error: 'DELIVERY_SERVER_NOT_FOUND', message: 'No active game server has this token.' });
      const rows = await db.all(
        "select id, tries, updated_date from delivery_queue where server_id = ? and status = 'waiting' and require_online = 0 order by id limit 500", [server.id]);
      return rows.map((r) => ({ id: String(r.id), status: Number(r.tries) > 0 ? 'error' : 'sending', retry: String(r.tries), updatedAt: r.updated_date }));
    },
  },
}];
