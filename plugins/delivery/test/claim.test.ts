import { request } from 'node:http';
import t from 'tap';
import { fields, sql } from '../../../core/sql.ts';
import { DeliveryQueue } from '../entities.ts';
import type { FastifyInstance } from 'fastify';
import { now } from '../../../core/format.ts';
import { TestClock } from '../../../core/clock.ts';
import { expectErrors, read, until } from '../../../test/fixtures.ts';
import { ADMIN_KEY, build, call } from '../../../test/helper.ts';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser, pollQueue, validate } from './fixtures.ts';

const Q = DeliveryQueue.c;
const claim = (app: FastifyInstance, body: Record<string, unknown>) => call(app, '/api/delivery/claim', { body, as: 'urlencoded' });
const ack = (app: FastifyInstance, body: Record<string, unknown>) => call(app, '/api/delivery/ack', { body, as: 'urlencoded' });

async function shop(app: FastifyInstance) {
  const server = await makeServer(app);
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: category, name: 'Sword', price: '1' });
  const rank = await makeProduct(app, { categoryID: category, name: 'Rank', price: '1' });
  await addCommand(app, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' });
  await addCommand(app, rank, { serverID: server.id, trigger: 'purchase', command: 'rank {username}', requireOnline: true });
  const steve = await makeUser(app, 'steve', 10_000);
  return { server, sword, rank, steve };
}

t.test('claim and ack: leases, requireOnline, retries up to maxTries', async (t) => {
  const clock = new TestClock();
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { delivery: { leaseSeconds: 1, maxTries: 2, sweepMs: 50 } } }, clock });
  const { server, sword, rank, steve } = await shop(app);
  await buy(app, { userID: steve, products: [sword, rank] });

  let res = await claim(app, { token: server.token });
  t.equal(res.statusCode, 200, res.body);
  let rows = res.json().commands;
  t.same(
    rows.map((r: { command: string }) => r.command),
    ['give steve sword'],
    'the requireOnline row waits for its player',
  );
  t.match(rows[0], { username: 'steve', userID: String(steve), productID: String(sword), trigger: 'purchase', tries: '0' });
  t.same((await pollQueue(app, server.token)).json(), [], 'a claimed row is not listed to the HTTP mode');
  t.same((await validate(app, server.token, [rows[0].id])).json(), { commands: [] }, 'nor handed out by validate');
  t.same((await claim(app, { token: server.token })).json(), { commands: [] }, 'nor claimed twice');

  res = await claim(app, { token: server.token, online: ['Steve'] });
  const rankRow = res.json().commands[0];
  t.equal(rankRow.command, 'rank steve', 'claimed once the player is online (any case)');
  res = await ack(app, { token: server.token, ids: [rankRow.id], result: 'done' });
  t.same(res.json(), { status: true, ids: [rankRow.id] });
  res = await ack(app, { token: server.token, ids: [rankRow.id], result: 'done' });
  t.equal(res.statusCode, 409, 'a second ack settles nothing, and is no success');
  t.match(res.json(), { status: false, error: 'DELIVERY_NOT_SETTLED', ids: [], unsettled: [rankRow.id] });

  // The sword's claimer never acks: after the lease (the clock moved past it, then a sweep) it is waiting again,
  // one try counted, listed as an error.
  clock.advance(2300);
  const statusOf = async (id: number) =>
    (await app.db.query(sql`select ${fields({ status: Q.status })} from ${DeliveryQueue} where ${Q.id} = ${id}`))[0]?.status;
  await until(async () => (await statusOf(rows[0].id)) === 'waiting');
  res = await ack(app, { token: server.token, ids: [rows[0].id, rankRow.id], result: 'done' });
  t.equal(res.statusCode, 409, 'a late ack is refused');
  t.match(res.json(), { error: 'DELIVERY_NOT_SETTLED', ids: [], unsettled: [rows[0].id, rankRow.id] }, 'naming every row it did not settle');
  const listed = (await pollQueue(app, server.token)).json();
  t.match(listed, [{ id: rows[0].id, status: 'error', retry: '1' }]);
  rows = (await claim(app, { token: server.token })).json().commands;
  t.match(rows, [{ id: listed[0].id, tries: '1' }]);
  res = await ack(app, { token: server.token, ids: [rows[0].id], result: 'failed', message: 'Unknown command' });
  t.same(res.json().ids, [rows[0].id]);
  const [failed] = await read(app, `/api/admin/delivery/queue?status=failed`);
  t.match(failed, { id: rows[0].id, status: 'failed', tries: '2', lastError: 'Unknown command' }, 'maxTries reached: failed, shown to the admin');
  t.same((await claim(app, { token: server.token })).json(), { commands: [] });

  res = await call(app, `/api/admin/delivery/queue/${failed.id}/redeliver`, { method: 'POST' });
  t.match(res.json(), { status: 'waiting', tries: '0' });
  res = await call(app, `/api/admin/delivery/queue/${failed.id}/cancel`, { method: 'POST' });
  t.match(res.json(), { status: 'cancelled' });
  t.same((await claim(app, { token: server.token })).json(), { commands: [] }, 'a cancelled row is not handed out');

  t.equal((await read(app, `/api/admin/delivery/queue?server=${server.id}&user=${steve}`)).length, 2);
  t.equal((await read(app, '/api/admin/delivery/queue?order=999')).length, 0);
  t.equal((await read(app, '/api/admin/delivery/queue?perPage=1&page=2')).length, 1);
  await expectErrors(t, app, [
    { url: `/api/admin/delivery/queue/${rankRow.id}/cancel`, method: 'POST', status: 409, error: 'CONFLICT', message: /done/ },
    { url: `/api/admin/delivery/queue/${rankRow.id}/redeliver`, method: 'PATCH', status: 404, error: 'NOT_FOUND' },
    { url: '/api/admin/delivery/queue/999/redeliver', method: 'POST', status: 404, error: 'DELIVERY_QUEUE_NOT_FOUND' },
    { url: '/api/admin/delivery/queue?status=lost', status: 400, error: 'VALIDATION_ERROR', message: /status/ },
    { url: '/api/delivery/claim', body: { token: server.token, limit: '0' }, status: 400, error: 'VALIDATION_ERROR', message: /limit/ },
    { url: '/api/delivery/claim', body: { token: server.token, limit: '101' }, status: 400, error: 'VALIDATION_ERROR', message: /limit/ },
    { url: '/api/delivery/claim', body: { token: 'nope' }, status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
    { url: '/api/delivery/ack', body: { token: server.token, ids: ['1'], result: 'maybe' }, status: 400, error: 'VALIDATION_ERROR', message: /result/ },
    { url: '/api/delivery/ack', body: { token: 'nope', ids: ['1'], result: 'done' }, status: 404, error: 'DELIVERY_SERVER_NOT_FOUND' },
  ]);
});

t.test('the SSE stream wakes a real client on a committed buy', async (t) => {
  // No wake-up rounds for other instances' work: only the buy's commit can wake the stream.
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { delivery: { heartbeatSeconds: 1, crossWakeMs: 0 } } } });
  const { server, sword, steve } = await shop(app);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });

  const bad = await fetch(`${address}/api/delivery/stream?token=nope`, { headers: { 'x-api-key': ADMIN_KEY } });
  t.equal(bad.status, 404);
  t.match(await bad.json(), { status: false, error: 'DELIVERY_SERVER_NOT_FOUND' });

  let text = '';
  const events: { at: number; kind: string }[] = [];
  const req = request(`${address}/api/delivery/stream?token=${server.token}`, { headers: { 'x-api-key': ADMIN_KEY } });
  const opened = new Promise<void>((resolve) =>
    req.on('response', (res) => {
      t.equal(res.statusCode, 200);
      t.match(res.headers['content-type'], /^text\/event-stream/);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (const block of chunk.split('\n\n')) {
          if (block.startsWith('event: work')) events.push({ at: Date.now(), kind: 'work' });
          else if (block.startsWith(': heartbeat')) events.push({ at: Date.now(), kind: 'heartbeat' });
        }
        resolve();
      });
    }),
  );
  req.end();
  t.teardown(() => req.destroy());
  await opened;
  await until(() => events.some((e) => e.kind === 'heartbeat'));
  t.ok(
    events.some((e) => e.kind === 'heartbeat'),
    'heartbeats on an idle stream',
  );
  const before = events.filter((e) => e.kind === 'work').length;

  await buy(app, { userID: steve, products: [sword] });
  await until(() => events.filter((e) => e.kind === 'work').length > before);
  const rows = (await claim(app, { token: server.token })).json().commands;
  t.equal(rows.length, 1, 'the woken claimer finds the command');
  t.match(text, /retry: \d+/);
});

t.test('a failed ack is handed out again only after a delay that grows with each try, and the stream is woken then', async (t) => {
  // Frozen: the delays pass when the test moves the clock, however slow the machine is.
  const clock = new TestClock({ frozen: true });
  const app = await build(t, {
    features: DELIVERY_FEATURES,
    config: { plugins: { delivery: { maxTries: 3, retryBaseSeconds: 1, retryFactor: 3, retryMaxSeconds: 2, sweepMs: 50, crossWakeMs: 0 } } },
    clock,
  });
  const { server, sword, steve } = await shop(app);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  let works = 0;
  const req = request(`${address}/api/delivery/stream?token=${server.token}`, { headers: { 'x-api-key': ADMIN_KEY } });
  const opened = new Promise<void>((resolve) =>
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        works += chunk.split('\n\n').filter((block) => block.startsWith('event: work')).length;
        resolve();
      });
    }),
  );
  req.end();
  t.teardown(() => req.destroy());
  await opened;
  await buy(app, { userID: steve, products: [sword] });
  // The wakes of the connect and of the buy are in, so a wake counted below is the sweep's.
  await until(() => works >= 2);

  /**
   * Fails the row's try, then moves the clock a second short of `delaySeconds`: not handed out;
   * then on: the sweep wakes the stream for the row once a second it ran in has passed its due time
   * (stored times keep whole seconds), and the next call hands it out again.
   */
  const failThenWait = async (tries: string, delaySeconds: number) => {
    const [row] = (await claim(app, { token: server.token })).json().commands;
    t.match(row, { command: 'give steve sword', tries });
    t.same((await ack(app, { token: server.token, ids: [row.id], result: 'failed', message: 'Unknown command' })).json().ids, [row.id]);
    const ackedBy = now();
    const [stamp] = await app.db.query(sql`select ${fields({ not_before: Q.notBefore })} from ${DeliveryQueue} where ${Q.id} = ${Number(row.id)}`);
    const stored = (Date.parse(`${String(stamp!.not_before).replace(' ', 'T')}Z`) - Date.parse(`${ackedBy.replace(' ', 'T')}Z`)) / 1000;
    t.equal(stored, delaySeconds, `after try ${Number(tries) + 1}: due ${delaySeconds} s after the ack`);
    t.same((await claim(app, { token: server.token })).json(), { commands: [] }, 'not handed out again at once');
    t.same((await pollQueue(app, server.token)).json(), [], 'nor listed to the HTTP mode');
    clock.advance((delaySeconds - 1) * 1000);
    t.same((await claim(app, { token: server.token })).json(), { commands: [] }, 'nor a second before it is due');
    const woken = works;
    clock.advance(2000);
    await until(() => works > woken);
    t.pass('the stream is woken when it comes due');
  };
  await failThenWait('0', 1);
  // The second waits base × factor, capped at retryMaxSeconds.
  await failThenWait('1', 2);
  const [last] = (await claim(app, { token: server.token })).json().commands;
  t.match(last, { tries: '2' });
  await ack(app, { token: server.token, ids: [last.id], result: 'failed', message: 'Unknown command' });
  t.match(await read(app, '/api/admin/delivery/queue?status=failed'), [{ id: last.id, status: 'failed', tries: '3' }], 'maxTries reached: failed at once');
  t.equal((await call(app, `/api/admin/delivery/queue/${last.id}/redeliver`, { method: 'POST' })).statusCode, 200);
  t.match((await claim(app, { token: server.token })).json().commands, [{ id: last.id, tries: '0' }], 'a redelivered row goes out at once');
});

t.test('a command that fails for good, by a failed ack or a lapsed lease, emits delivery.failed once', async (t) => {
  const clock = new TestClock();
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { delivery: { leaseSeconds: 1, maxTries: 1, sweepMs: 50 } } }, clock });
  const { server, sword, rank, steve } = await shop(app);
  const failed: unknown[] = [];
  app.events.on('delivery.failed', (e) => {
    failed.push(e);
  });
  await buy(app, { userID: steve, products: [sword, rank] });
  const [swordRow, rankRow] = (await claim(app, { token: server.token, online: ['steve'] })).json().commands;
  await ack(app, { token: server.token, ids: [swordRow.id], result: 'failed', message: 'Unknown command' });
  await ack(app, { token: server.token, ids: [swordRow.id], result: 'failed', message: 'Unknown command' });
  clock.advance(2300);
  await until(() => failed.length >= 2);
  t.match(failed, [
    { queueId: Number(swordRow.id), serverId: Number(server.id), userId: steve, username: 'steve', command: 'give steve sword', error: 'Unknown command' },
    { queueId: Number(rankRow.id), command: 'rank steve', error: 'the lease ran out before an ack' },
  ]);
  t.equal(failed.length, 2, 'once each');
});

t.test('a claimer takes and acks a full batch of 100, with a thousand players online: bodies past the default field limit', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES });
  const { server, steve } = await shop(app);
  const category = await makeCategory(app, { name: 'Coins' });
  const coin = await makeProduct(app, { categoryID: category, name: 'Coin', price: '0.01' });
  await addCommand(app, coin, { serverID: server.id, trigger: 'purchase', command: 'give {username} coin', perUnit: true, requireOnline: true });
  t.equal((await buy(app, { userID: steve, products: [{ id: coin, quantity: 100 }] })).statusCode, 200);
  const online = [...Array.from({ length: 999 }, (_, i) => `player${i}`), 'steve'];
  let res = await claim(app, { token: server.token, limit: '100', online });
  t.equal(res.statusCode, 200, res.body.slice(0, 200));
  const ids = res.json().commands.map((r: { id: string }) => r.id);
  t.equal(ids.length, 100, "the online player's rows are claimed");
  res = await ack(app, { token: server.token, ids, result: 'failed', message: 'the player logged out' });
  t.equal(res.statusCode, 200, res.body.slice(0, 200));
  t.equal(res.json().ids.length, 100, 'every row settled');
});
