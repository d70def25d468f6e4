/**
 * `delivery/plugin-queue`: the official game plugin's HTTP mode polls
 * `GET /api/command-logs/<token>/queue` every few seconds from every game server. Here one server
 * with 200 commands waiting (bought through the store) is polled as fast as it answers. The
 * baseline does the same reads, as a hand-written server would: its waiting rows that are due, the
 * server of its token held in memory for a few seconds as the server holds it (docs/performance.md).
 */
import { createHash } from 'node:crypto';
import { now } from '../core/format.ts';
import type { BaseDb, Row } from './base-db.ts';
import { Api, type BaselineRoute, type BenchNote, type Scenario } from './scenario.ts';

const WAITING = 200;

export const scenarios: Scenario[] = [
  {
    name: 'delivery/plugin-queue',
    readOnly: true,
    async seed(api: Api) {
      const server = (await api.send('POST', '/api/admin/delivery/servers', { name: 'Survival' })) as { id: string; token: string };
      const categoryID = await api.create('/api/admin/store/categories', { name: 'Ranks' });
      const productID = await api.create('/api/admin/store/products', { categoryID, name: 'VIP', price: '1.00' });
      await api.send('POST', `/api/admin/store/products/${productID}/commands`, {
        serverID: server.id,
        command: 'lp user {username} parent add vip',
        trigger: 'purchase',
      });
      const buyer = await api.player(5000, 'collector', 1_000_00);
      await Api.batched(WAITING, 10, () => api.send('POST', '/api/store/buy', { userID: buyer, products: [{ id: productID }] }));
      return [{ method: 'GET', path: `/api/command-logs/${server.token}/queue` }];
    },
    baseline: {
      method: 'GET',
      url: '/api/command-logs/:token/queue',
      async handler(db: BaseDb, request, reply) {
        const serverId = await pollServer(db, (request.params as { token: string }).token);
        if (serverId === undefined)
          return reply.code(404).send({ status: false, error: 'DELIVERY_SERVER_NOT_FOUND', message: 'No active game server has this token.' });
        const rows = await db.all(
          `select id, tries, updated_date from delivery_queue where server_id = ? and ${DUE} and require_online = 0 order by id limit 500`,
          [serverId, now()],
        );
        return rows.map((r) => ({ id: String(r.id), status: Number(r.tries) > 0 ? 'error' : 'sending', retry: String(r.tries), updatedAt: r.updated_date }));
      },
    },
  },
];

/** The poll's servers by token, held 5 s after a read, as the server holds them (its poll then makes one statement). */
const pollServers = new Map<string, { id: number; at: number }>();

async function pollServer(db: BaseDb, token: string): Promise<number | undefined> {
  const known = pollServers.get(token);
  if (known && Date.now() - known.at < 5_000) return known.id;
  const server = await serverOf(db, token);
  if (server) pollServers.set(token, { id: Number(server.id), at: Date.now() });
  return server && Number(server.id);
}

/** The baseline's active game server of a token, or undefined. */
async function serverOf(db: BaseDb, token: string): Promise<Row | undefined> {
  const [server] = await db.all('select id from delivery_servers where token_hash = ? and is_active = 1', [createHash('sha256').update(token).digest('hex')]);
  return server;
}

/** Waiting and not held back: a command that failed is not handed out again before its retry time (not_before). */
const DUE = "status = 'waiting' and (not_before is null or not_before < ?)";
const VALIDATE_UPDATE = "update delivery_queue set status = 'done', updated_date = ? where id = ? and status = 'waiting'";
const validateSelect = (n: number) =>
  `select id, username, command from delivery_queue where server_id = ? and ${DUE} and require_online = 0 and id in (${Array(n).fill('?').join(', ')}) order by id`;

/**
 * The plugin's validate by hand, for the rush (bench/rush.ts): of the listed rows still waiting,
 * the first player's, each marked done by a conditional update so it goes out once.
 */
export const baselineRoutes: BaselineRoute[] = [
  {
    method: 'POST',
    url: '/api/command-logs/validate',
    async handler(db: BaseDb, request, reply) {
      const { token, commands } = request.body as { token: string; commands?: string[] };
      const server = await serverOf(db, token);
      if (!server) return reply.code(404).send({ status: false, error: 'DELIVERY_SERVER_NOT_FOUND', message: 'No active game server has this token.' });
      const ids = [...new Set(commands ?? [])].slice(0, 500).map(Number);
      if (ids.length === 0) return { commands: [] };
      const at = now();
      const first = (rows: Row[]) => rows.filter((r) => r.username.toLowerCase() === rows[0]?.username.toLowerCase());
      if (db.sqlite) {
        const sqlite = db.sqlite;
        const taken = sqlite.tx(() =>
          first(sqlite.all(validateSelect(ids.length), server.id, at, ...ids)).filter((r) => sqlite.run(VALIDATE_UPDATE, at, r.id).changes === 1),
        );
        return { commands: taken.map((r) => ({ command: r.command, username: r.username })) };
      }
      const taken = await db.mysqlTx(async (conn) => {
        const [rows] = (await conn.execute(`${validateSelect(ids.length)} for update`, [server.id, at, ...ids])) as unknown as [Row[]];
        const out: { command: string; username: string }[] = [];
        for (const r of first(rows)) {
          const [res] = (await conn.execute(VALIDATE_UPDATE, [at, r.id])) as unknown as [{ affectedRows: number }];
          if (res.affectedRows === 1) out.push({ command: r.command, username: r.username });
        }
        return out;
      });
      return { commands: taken };
    },
  },
];

interface ClaimedCommand {
  id: string;
  command: string;
}

/** Percentile of sorted values. */
const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** A game server with its own product and command, so the note's rows stay out of the scenario's queue. */
async function serverWithProduct(api: Api, name: string) {
  const server = (await api.send('POST', '/api/admin/delivery/servers', { name })) as { id: string; token: string };
  // Active: a product under a hidden category is not for sale. The notes run after every scenario, so no page counts it.
  const categoryID = await api.create('/api/admin/store/categories', { name: `${name} kits` });
  const productID = await api.create('/api/admin/store/products', { categoryID, name: `${name} kit`, price: '0.01' });
  await api.send('POST', `/api/admin/store/products/${productID}/commands`, { serverID: server.id, command: 'give {username} diamond 1', trigger: 'purchase' });
  const buyer = await api.player(name.length * 1000 + 7, `${name}Buyer`, 1_000_000_00);
  return { token: server.token, buy: () => api.request('POST', '/api/store/buy', { userID: buyer, products: [{ id: productID }] }) };
}

/**
 * From a buy's answer to its command in the hands of a claimer woken by the stream: one buy at a
 * time, the claimer waiting on `GET /api/delivery/stream`, claiming on each `work` event.
 */
async function latency(api: Api): Promise<string> {
  const { token, buy } = await serverWithProduct(api, 'Latency');
  const events = await api.stream(`/api/delivery/stream?token=${token}`);
  const decoder = new TextDecoder();
  let buffer = '';
  const nextWork = async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (event.startsWith('event: work')) return;
        continue;
      }
      const { value, done } = await events.read();
      if (done) throw new Error('the stream ended');
      buffer += decoder.decode(value, { stream: true });
    }
  };
  const claim = async () => ((await api.request('POST', '/api/delivery/claim', { token, limit: 100 })) as { commands: ClaimedCommand[] }).commands;
  // The connect-time wake-up, on an empty queue.
  await nextWork();
  await claim();
  const samples: number[] = [];
  for (let i = 0; i < 200; i++) {
    await buy();
    const bought = performance.now();
    await nextWork();
    const claimed = await claim();
    samples.push(performance.now() - bought);
    if (claimed.length === 0) throw new Error('woken, but nothing to claim');
    await api.request('POST', '/api/delivery/ack', { token, ids: claimed.map((c) => c.id), result: 'done' });
  }
  await events.cancel();
  samples.sort((a, b) => a - b);
  return (
    `delivery: a buy's answer to its command claimed by a stream-woken claimer, 200 buys one at a time: ` +
    `p50 **${at(samples, 0.5).toFixed(1)} ms**, p99 **${at(samples, 0.99).toFixed(1)} ms**.`
  );
}

/** Claim-and-ack throughput: 2,000 waiting commands drained by four claimers taking 20 at a time. */
async function drain(api: Api): Promise<string> {
  const { token, buy } = await serverWithProduct(api, 'Drain');
  await Api.batched(2000, 10, () => buy());
  const started = performance.now();
  let settled = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (;;) {
        const { commands } = (await api.request('POST', '/api/delivery/claim', { token, limit: 20 })) as { commands: ClaimedCommand[] };
        if (commands.length === 0) return;
        const { ids } = (await api.request('POST', '/api/delivery/ack', { token, ids: commands.map((c) => c.id), result: 'done' })) as { ids: string[] };
        settled += ids.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (settled !== 2000) throw new Error(`${settled} of 2000 commands settled`);
  return (
    `delivery: claim + ack, 4 claimers of 20 draining 2,000 commands: **${Math.round(settled / seconds)} commands/s** ` +
    `(each handed out once: ${settled} acks).`
  );
}

export const notes: BenchNote[] = [
  { name: 'delivery/latency', measure: latency },
  { name: 'delivery/drain', measure: drain },
];
