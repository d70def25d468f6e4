import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call, onMysql, sharedDatabaseUrl } from '../../../test/helper.ts';
import { expectErrors, makeUser, rowCount } from '../../../test/fixtures.ts';
import { count, fields, sql } from '../../../core/sql.ts';
import { NotificationsDelivery, NotificationsEvent } from '../entities.ts';
import { type Answer, RECEIVERS, startReceiver, verified, type Receiver } from '../../../test/receiver.ts';

const FEATURES = ['users', 'credits', 'notifications'];
const FAST = { retryDelaysSeconds: [1, 3], timeoutMs: 1000, leaseSeconds: 5, pollMs: 100 };

async function app(t: Parameters<typeof build>[0], options: Record<string, unknown> = {}, databaseUrl?: string): Promise<FastifyInstance> {
  return build(t, { features: FEATURES, config: { plugins: { notifications: { ...FAST, ...options } }, outbound: RECEIVERS }, databaseUrl });
}

async function receiver(t: { teardown(fn: () => unknown): void }, answer?: Answer): Promise<Receiver> {
  const r = await startReceiver(answer);
  t.teardown(() => r.close());
  return r;
}

async function endpoint(
  a: FastifyInstance,
  url: string,
  events = ['credits.changed'],
  extra: Record<string, unknown> = {},
): Promise<{ id: string; secret: string }> {
  const res = await call(a, '/api/admin/notifications/endpoints', { body: { name: 'ERP', url, events, ...extra }, as: 'json' });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
}

function addCredits(a: FastifyInstance, username: string, amount = '1.00') {
  return call(a, '/api/credits/add', { body: { target_username: username, amount } });
}

async function deliveries(a: FastifyInstance, endpointId: string): Promise<any[]> {
  return (await call(a, `/api/admin/notifications/endpoints/${endpointId}/deliveries`)).json();
}

async function until<T>(what: () => Promise<T>, done: (v: T) => boolean, ms = 15000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until the queue has nothing left to send: every event fanned out and every delivery ended.
 * From then on no endpoint gets anything more, so what a receiver has is all it will get.
 */
async function drained(a: FastifyInstance): Promise<void> {
  const D = NotificationsDelivery.c;
  const E = NotificationsEvent.c;
  await until(
    async () => {
      const [open] = await a.db.query(sql`select ${fields({ n: count() })} from ${NotificationsDelivery} where ${D.status} in ('pending', 'sending')`);
      const [unfanned] = await a.db.query(sql`select ${fields({ n: count() })} from ${NotificationsEvent} where ${E.fanned} = ${0}`);
      return Number(open!.n) + Number(unfanned!.n);
    },
    (left) => left === 0,
  );
}

t.test('the events registry lists what enabled features declare', async (t) => {
  const a = await app(t);
  const res = await call(a, '/api/admin/notifications/events');
  t.equal(res.statusCode, 200);
  const names = res.json().map((e: { name: string }) => e.name);
  t.ok(names.includes('credits.changed') && names.includes('users.created') && names.includes('notifications.test'));
  t.notOk(names.includes('store.order.completed'), "a disabled feature's events are not offered");
  t.match(
    res.json().find((e: { name: string }) => e.name === 'credits.changed'),
    { feature: 'credits', description: /Credits moved/ },
  );
});

t.test('endpoints: created with a secret, changed, listed, deleted; bad input changes nothing', async (t) => {
  const a = await app(t);
  const made = await endpoint(a, 'https://erp.example/hook', ['credits.changed', 'users.created']);
  t.match(made, { name: 'ERP', kind: 'webhook', url: 'https://erp.example/hook', events: ['credits.changed', 'users.created'], active: true });
  t.match(made.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  const patched = await call(a, `/api/admin/notifications/endpoints/${made.id}`, { method: 'PATCH', body: { active: 'false', events: ['users.created'] } });
  t.equal(patched.statusCode, 200);
  t.match(patched.json(), { active: false, events: ['users.created'], secret: made.secret });

  await expectErrors(t, a, [
    {
      url: '/api/admin/notifications/endpoints',
      body: { name: 'x', url: 'https://x.example', events: ['store.nope'] },
      status: 400,
      error: 'NOTIFICATION_UNKNOWN_EVENT',
      message: /store\.nope/,
    },
    {
      url: '/api/admin/notifications/endpoints',
      body: { name: 'x', url: 'ftp://x.example', events: [] },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /url/,
    },
    { url: '/api/admin/notifications/endpoints', body: { name: 'x', url: 'https://x.example', kind: 'slack' }, status: 400, error: 'VALIDATION_ERROR' },
    { url: '/api/admin/notifications/endpoints', body: { url: 'https://x.example' }, status: 400, error: 'VALIDATION_ERROR' },
    { url: `/api/admin/notifications/endpoints/${made.id}`, method: 'PATCH', body: { events: ['nope'] }, status: 400, error: 'NOTIFICATION_UNKNOWN_EVENT' },
    { url: '/api/admin/notifications/endpoints/999', method: 'PATCH', body: { name: 'y' }, status: 404, error: 'NOTIFICATION_ENDPOINT_NOT_FOUND' },
    { url: '/api/admin/notifications/endpoints/999/test', method: 'POST', status: 404, error: 'NOTIFICATION_ENDPOINT_NOT_FOUND' },
    { url: '/api/admin/notifications/deliveries/999/redeliver', method: 'POST', status: 404, error: 'NOTIFICATION_DELIVERY_NOT_FOUND' },
    { url: '/api/admin/notifications/endpoints/abc', status: 400, error: 'VALIDATION_ERROR' },
  ]);
  t.equal(await rowCount(a, 'notifications_endpoints'), 1, 'nothing refused was stored');
  t.same((await call(a, `/api/admin/notifications/endpoints/${made.id}`)).json().events, ['users.created'], 'a refused change changed nothing');

  t.equal((await call(a, `/api/admin/notifications/endpoints/${made.id}`, { method: 'DELETE' })).statusCode, 200);
  t.same((await call(a, '/api/admin/notifications/endpoints')).json(), []);

  // Each change is in the audit log, with the key that made it and never the secret; the refused ones are not.
  const entries = (await call(a, '/api/admin/audit?action=notifications.')).json();
  t.match(entries, [
    { action: 'notifications.endpoint.delete', actor: 'bootstrap', targetType: 'endpoint', targetID: made.id, before: { name: 'ERP', active: false } },
    {
      action: 'notifications.endpoint.update',
      before: { active: true, events: ['credits.changed', 'users.created'] },
      after: { active: false, events: ['users.created'] },
    },
    { action: 'notifications.endpoint.create', summary: 'Added webhook endpoint ERP', after: { url: 'https://erp.example/hook' } },
  ]);
  t.equal(entries.length, 3, 'refused changes leave no entry');
  t.notMatch(JSON.stringify(entries), made.secret, 'the secret is not kept in the log');
});

t.test('a delivery is signed the Standard Webhooks way: good verifies, tampered and replayed do not', async (t) => {
  const a = await app(t);
  const r = await receiver(t);
  const { id, secret } = await endpoint(a, r.url);
  await makeUser(a, 'steve');
  t.equal((await addCredits(a, 'steve', '12.50')).statusCode, 200);
  const [got] = await r.waitFor(1);

  const message = verified(secret, got!);
  t.equal(message.type, 'credits.changed');
  t.match(message.data, { delta: 1250, balance: 1250 });
  t.match(got!.headers['webhook-id'], /^msg_[0-9a-f]{32}$/);
  const [stored] = await until(
    () => deliveries(a, id),
    (d) => d[0]?.status === 'delivered',
  );
  t.equal(stored.messageID, got!.headers['webhook-id'], "the webhook-id is the event's stored id");
  t.match(stored.attempts, [{ status: '200', error: null }]);

  t.throws(() => verified(secret, { ...got!, body: got!.body.replace('1250', '9999') }), /signature/i, 'a tampered body is refused');
  t.throws(() => verified(`whsec_${Buffer.alloc(24, 1).toString('base64')}`, got!), /signature/i, 'another secret is refused');
  const realNow = Date.now;
  Date.now = () => realNow() + 10 * 60 * 1000;
  try {
    t.throws(() => verified(secret, got!), /too old/i, 'the same request replayed ten minutes later is refused');
  } finally {
    Date.now = realNow;
  }
  t.equal(r.received.length, 1, 'one event, one request');
});

t.test('an endpoint failing on purpose: retried with growing delays, each answer kept; a dead one ends failed and is redelivered by hand', async (t) => {
  const a = await app(t, { responseBytes: 12 });
  const flaky = await receiver(t, (n) => (n <= 2 ? { status: 500, body: 'internal server error, try later' } : { status: 204 }));
  const dead = await receiver(t, () => ({ status: 503 }));
  const ok = await endpoint(a, flaky.url);
  const gone = await endpoint(a, dead.url);
  await makeUser(a, 'steve');
  await addCredits(a, 'steve');

  const tries = await flaky.waitFor(3, 20000);
  const gaps = [tries[1]!.at - tries[0]!.at, tries[2]!.at - tries[1]!.at];
  t.ok(gaps[0]! >= 1000 && gaps[1]! >= 3000 && gaps[1]! > gaps[0]!, `the delays grow: ${gaps.join(' ms, ')} ms`);
  t.equal(flaky.ids().size, 1, 'every try carries the same webhook-id');
  const [d] = await until(
    () => deliveries(a, ok.id),
    (x) => x[0]?.status === 'delivered',
  );
  t.match(d.attempts, [
    { status: '500', response: 'internal ser', error: /500/ },
    { status: '500', response: 'internal ser' },
    { status: '204', response: '', error: null },
  ]);
  for (const attempt of d.attempts) t.match(attempt.durationMs, /^\d+$/);

  const [failed] = await until(
    () => deliveries(a, gone.id),
    (x) => x[0]?.status === 'failed',
    20000,
  );
  t.equal(failed.attempts.length, 3, 'one try and the two retries configured');
  t.equal(dead.received.length, 3);

  dead.answer = () => ({ status: 200 });
  const again = await call(a, `/api/admin/notifications/deliveries/${failed.id}/redeliver`, { method: 'POST' });
  t.equal(again.statusCode, 202);
  const queuedTwice = await call(a, `/api/admin/notifications/deliveries/${failed.id}/redeliver`, { method: 'POST' });
  t.equal(queuedTwice.statusCode, 409, 'a delivery already queued is not queued again');
  t.equal(queuedTwice.json().error, 'NOTIFICATION_DELIVERY_QUEUED');
  await dead.waitFor(4);
  const [redelivered] = await until(
    () => deliveries(a, gone.id),
    (x) => x[0]?.status === 'delivered',
  );
  t.equal(redelivered.attempts.length, 4);
  t.equal(dead.ids().size, 1, "the redelivery carries the event's webhook-id");
  const [logged, ...more] = (await call(a, '/api/admin/audit?action=notifications.delivery.')).json();
  t.match(logged, { action: 'notifications.delivery.redeliver', targetID: String(failed.id), before: { status: 'failed' }, after: { status: 'pending' } });
  t.equal(more.length, 0, 'the refused second redelivery is not logged');
});

t.test('an endpoint with no answer within timeoutMs: the try ends as a timeout, and the retry goes out', async (t) => {
  const a = await app(t);
  // The first answer comes well after FAST's timeoutMs (1 s): the try is cut before it.
  const late = await receiver(t, (n) => (n === 1 ? { status: 200, delayMs: 5000 } : { status: 204 }));
  const hook = await endpoint(a, late.url);
  await makeUser(a, 'steve');
  await addCredits(a, 'steve');
  const [d] = await until(
    () => deliveries(a, hook.id),
    (x) => x[0]?.status === 'delivered',
    20000,
  );
  t.match(d.attempts, [
    { status: null, error: 'No answer within 1000 ms.' },
    { status: '204', error: null },
  ]);
  t.equal(late.ids().size, 1, 'the retry carries the same webhook-id');
});

t.test('a slow endpoint slows neither the request nor the other endpoints', async (t) => {
  // Anything that waited on the slow endpoint would take its whole delay: the checks below tell that apart
  // by order and by half the delay, not by tight timings a busy CI machine can miss.
  const delayMs = 4000;
  const a = await app(t, { concurrency: 2, timeoutMs: delayMs + 2000, leaseSeconds: 10 });
  const slow = await receiver(t, () => ({ status: 200, delayMs }));
  const fast = await receiver(t);
  await endpoint(a, slow.url);
  await endpoint(a, fast.url);
  await makeUser(a, 'steve');
  const started = Date.now();
  for (let i = 0; i < 6; i++) {
    const begun = Date.now();
    t.equal((await addCredits(a, 'steve')).statusCode, 200);
    t.ok(Date.now() - begun < delayMs / 2, 'the request did not wait for the endpoints');
  }
  await fast.waitFor(6, delayMs * 2);
  t.equal(slow.received.length, 2, `the fast endpoint had all six (in ${Date.now() - started} ms) while the slow one still held its two slots`);
  await slow.waitFor(6, delayMs * 5);
  t.equal(slow.ids().size, 6);
});

t.test('while requests keep the process busy, sends yield to them; the backlog follows once the rush passes', async (t) => {
  const a = await app(t, { busySendsPerSecond: 4 });
  const r = await receiver(t);
  await endpoint(a, r.url);
  await makeUser(a, 'steve');
  // A rush: the event loop never rests (each turn spins 20 ms) while credits keep moving.
  const until = Date.now() + 3000;
  let events = 0;
  while (Date.now() < until) {
    const spin = Date.now() + 20;
    while (Date.now() < spin) {
      /* busy, as a saturated server is */
    }
    t.equal((await addCredits(a, 'steve')).statusCode, 200);
    events++;
  }
  const during = r.received.length;
  // The rush's first event counts as busy: its first window is not sent at full speed either.
  t.ok(during <= 4 * 3 + 4, `${during} of ${events} events sent during the 3 s rush, at most about 4 a second from the first`);
  t.ok(events > during * 2, `most events waited (${events} queued)`);
  await r.waitFor(events, 10000);
  t.equal(r.ids().size, events, 'every event went out once the rush passed');
});

t.test('a machine kept busy by something else (a database beside the server) counts too, while events arrive', async (t) => {
  const a = await app(t, { busySendsPerSecond: 4 });
  const r = await receiver(t);
  await endpoint(a, r.url);
  await makeUser(a, 'steve');
  // Every core spun by another process; this one's event loop mostly waits, as for a database's answers.
  const spinners = cpus().map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  t.teardown(() => {
    for (const p of spinners) p.kill('SIGKILL');
  });
  // Events arrive five at a time for 3 s, so they outpace 4 sends a second however slowly a loaded
  // machine answers each request.
  const started = Date.now();
  let events = 0;
  while (Date.now() - started < 3000) {
    const answers = await Promise.all(Array.from({ length: 5 }, () => addCredits(a, 'steve')));
    t.same(
      answers.map((res) => res.statusCode),
      [200, 200, 200, 200, 200],
    );
    events += answers.length;
  }
  const during = r.received.length;
  const seconds = (Date.now() - started) / 1000;
  for (const p of spinners) p.kill('SIGKILL');
  t.ok(during <= 4 * seconds + 4, `${during} of ${events} events sent during the ${seconds} s, at most about 4 a second from the first`);
  t.ok(events > during * 2, `most events waited (${events} queued)`);
  await r.waitFor(events, 15000);
  t.equal(r.ids().size, events, 'every event went out once the machine was free');
});

t.test('a test message from the admin API goes to that endpoint only', async (t) => {
  const a = await app(t);
  const r = await receiver(t);
  const other = await receiver(t);
  const { id, secret } = await endpoint(a, r.url, []);
  await endpoint(a, other.url, ['notifications.test']);
  const res = await call(a, `/api/admin/notifications/endpoints/${id}/test`, { method: 'POST' });
  t.equal(res.statusCode, 202);
  t.match(res.json(), { endpointID: id, event: 'notifications.test', status: /^(pending|sending|delivered)$/ });
  const [got] = await r.waitFor(1);
  t.match(verified(secret, got!), { type: 'notifications.test', data: { endpointId: Number(id) } });
  await drained(a);
  t.equal(other.received.length, 0);
  t.match((await call(a, `/api/admin/notifications/deliveries/${res.json().id}`)).json(), { status: 'delivered' });
  t.match((await call(a, '/api/admin/audit?action=notifications.endpoint.test')).json(), [{ targetID: id, summary: 'Sent a test message' }]);
});

t.test('an inactive endpoint and one not subscribed get nothing; a rolled-back change queues nothing', async (t) => {
  const a = await app(t);
  const r = await receiver(t);
  await endpoint(a, r.url, ['credits.changed'], { active: false });
  await endpoint(a, r.url, ['users.created']);
  await makeUser(a, 'steve');
  t.equal((await addCredits(a, 'nobody')).statusCode, 404);
  await addCredits(a, 'steve');
  await r.waitFor(1);
  await drained(a);
  t.same(
    r.received.map((x) => JSON.parse(x.body).type),
    ['users.created'],
  );
  t.equal(await rowCount(a, 'notifications_events'), 1);
});

t.test('two server processes on one database send each event once', { skip: !onMysql && 'one server process serves a SQLite file' }, async (t) => {
  const url = await sharedDatabaseUrl(t);
  // Without a cache, the second process sees the endpoints the first made at its next event.
  const one = await app(t, { endpointsCacheSeconds: 0 }, url);
  const two = await app(t, { endpointsCacheSeconds: 0 }, url);
  const r = await receiver(t, () => ({ status: 200, delayMs: 20 }));
  await endpoint(one, r.url);
  await endpoint(one, r.url);
  await makeUser(one, 'steve');
  await Promise.all(Array.from({ length: 20 }, (_, i) => addCredits(i % 2 ? one : two, 'steve')));
  await r.waitFor(40, 20000);
  await drained(one);
  // A row claimed twice goes out beside its first send, before the rows end; stopped, neither process sends again.
  await Promise.all([one.close(), two.close()]);
  t.equal(r.received.length, 40, 'no delivery was sent twice');
  t.equal(r.ids().size, 20);
});

t.test('deliveries that ended past retentionDays go with their tries and events; the rest stay', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const a = await app(t, {}, url);
  const r = await receiver(t);
  const { id } = await endpoint(a, r.url);
  await makeUser(a, 'steve');
  for (let i = 0; i < 4; i++) await addCredits(a, 'steve');
  await until(
    () => deliveries(a, id),
    (x) => x.length === 4 && x.every((d) => d.status === 'delivered'),
  );
  const D = NotificationsDelivery.c;
  const deliveryIds = async (app: FastifyInstance) => (await NotificationsDelivery.select(app.db, sql`order by ${D.id}`)).map((d) => d.id);
  const ids = await deliveryIds(a);
  // The two oldest ended 40 days ago; the third still waits for a retry since then; the fourth is recent.
  const old = '2020-01-01 00:00:00';
  await a.db.run(sql`update ${NotificationsDelivery} set ${D.updatedDate} = ${old} where ${D.id} in ${ids.slice(0, 3)}`);
  await NotificationsDelivery.update(a.db, ids[2]!, { status: 'pending', nextAttemptDate: '2999-01-01 00:00:00' });
  await a.db.run(sql`update ${NotificationsEvent} set ${NotificationsEvent.c.createdDate} = ${old}`);
  await a.close();

  const b = await app(t, {}, url);
  // The start-up sweep's end: the deliveries go first, then the events (on SQLite a commit is seen before its fsync answers it).
  await until(
    async () => [await rowCount(b, 'notifications_deliveries'), await rowCount(b, 'notifications_events')],
    ([deliveries, events]) => deliveries === 2 && events === 2,
  );
  const left = await deliveryIds(b);
  t.same(left, [ids[2], ids[3]], 'the ended old ones went; one still retrying and a recent one stay');
  t.equal(await rowCount(b, 'notifications_attempts'), 2, 'their tries went with them (the pending one keeps its first try)');
  const e = NotificationsEvent.as('e');
  const d = NotificationsDelivery.as('d');
  const events = await b.db.query(sql`select ${fields({ id: e.c.id })} from ${e} join ${d} on ${d.c.eventId} = ${e.c.id}`);
  t.equal(events.length, 2, 'the events of the deliveries left are kept');
  t.equal(await rowCount(b, 'notifications_events'), 2, 'the events of the removed deliveries went');
  // Both ended long ago before the next start, so a start-up sweep would find them.
  await b.db.run(sql`update ${NotificationsDelivery} set ${D.status} = 'delivered', ${D.updatedDate} = ${old}`);
  await b.close();

  const keep = await app(t, { retentionDays: 0 }, url);
  // A sweep that does not happen has no event to wait for: this is longer than a start-up sweep of two rows takes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(await rowCount(keep, 'notifications_deliveries'), 2, 'retentionDays 0 keeps every delivery');
});
