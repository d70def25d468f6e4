/**
 * `npm run test:fuzz`: every route of the OpenAPI document gets malformed requests (cases.ts) and
 * must answer each with a 2xx or a 4xx of the documented error shape, never a 5xx, in time, and
 * change nothing when it refuses (run.ts); whatever text it sent, no queued game command holds a
 * control character. Seeded and bounded:
 *   FUZZ_ROUNDS  rounds, each with fresh seeded data and freshly drawn values (default 3)
 *   FUZZ_SEED    the generator's seed (default 1); a failure repeats with the same seed
 *   FUZZ_TIMEOUT_MS  longest wait for one answer (default 10000)
 * With TEST_MYSQL_URL it runs on MySQL/MariaDB, like the other tests.
 */
import nock from 'nock';
import t from 'tap';
import { hasControlCharacter } from '../../core/format.ts';
import { ADMIN_KEY, apiKey, build } from '../helper.ts';
import { casesFor } from './cases.ts';
import { Random } from './random.ts';
import { Runner, describe, type Finding } from './run.ts';
import { operations } from './schema.ts';
import { FUZZ_STRIPE_WEBHOOK_SECRET, knownValue, seed } from './seed.ts';
import { DeliveryQueue } from '../../plugins/delivery/entities.ts';

function setting(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}
const ROUNDS = setting('FUZZ_ROUNDS', 3);
const SEED = setting('FUZZ_SEED', 1);
const TIMEOUT_MS = setting('FUZZ_TIMEOUT_MS', 10_000);
/** Findings listed per operation; the rest are counted. */
const SHOWN = 15;

/** Reads first and deletions last, so a round's deletions do not leave the other routes nothing to name. */
const METHOD_ORDER: Record<string, number> = { GET: 0, DELETE: 2 };

t.test('every documented route refuses malformed requests cleanly and changes nothing', async (t) => {
  // Stripe enabled with test secrets and its API mocked, so checkouts succeed and webhooks get as
  // far as the signature check (which no fuzzed body passes).
  nock.disableNetConnect();
  t.teardown(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });
  let session = 0;
  nock('https://api.stripe.com')
    .persist()
    .post('/v1/checkout/sessions')
    .reply(200, () => {
      const id = `cs_fuzz_${++session}`;
      return { id, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${id}` };
    })
    .get('/v1/balance')
    .reply(200, { object: 'balance' });
  // The gateways' credential checks take whatever key and address the fuzzed settings left (a
  // host's own scope answers first); the email outbox's and the subscriptions' rounds are not under
  // test and would change their tables between requests.
  nock(/.*/)
    .persist()
    .get(/\/v1\/balance$/)
    .reply(200, { object: 'balance' });
  nock(/.*/)
    .persist()
    .post(/\/v1\/oauth2\/token$/)
    .reply(200, { access_token: 'fuzz', expires_in: 3600 });
  const app = await build(t, {
    env: { STRIPE_SECRET_KEY: 'sk_test_fuzz', STRIPE_WEBHOOK_SECRET: FUZZ_STRIPE_WEBHOOK_SECRET },
    config: { plugins: { email: { pollMs: 3_600_000 }, subscriptions: { sweepMs: 3_600_000 } } },
  });
  const docs = await app.inject({ url: '/docs/json' });
  t.equal(docs.statusCode, 200, 'the OpenAPI document');
  const ops = operations(docs.json());
  t.ok(ops.some((op) => op.path.startsWith('/api/admin/')) && ops.some((op) => op.body), 'the document lists the API, admin routes and bodies included');
  const ordered = [...ops].sort((a, b) => (METHOD_ORDER[a.method] ?? 1) - (METHOD_ORDER[b.method] ?? 1));

  const keys = { admin: ADMIN_KEY, api: await apiKey(app) };
  const { server } = app.appConfig;
  const limits = { field: server.fieldLimit, fields: server.maxFields, body: server.bodyLimit };
  const runner = new Runner(app, TIMEOUT_MS);
  const findings = new Map<string, Finding[]>();
  const sent = new Map<string, number>();
  const name = (op: { method: string; path: string }) => `${op.method} ${op.path}`;

  for (let round = 0; round < ROUNDS; round++) {
    const seeded = await seed(app, round);
    runner.rebase();
    for (const op of ordered) {
      const cases = casesFor(op, {
        rng: Random.for(SEED, round, op.method, op.path),
        known: (field) => knownValue(seeded, op.path, field),
        keys,
        routes: ops,
        limits,
      });
      const found = await runner.run(cases);
      findings.set(name(op), [...(findings.get(name(op)) ?? []), ...found]);
      sent.set(name(op), (sent.get(name(op)) ?? 0) + cases.length);
    }
  }

  for (const op of ops) {
    const found = (findings.get(name(op)) ?? []).map(describe);
    const shown = found.length > SHOWN ? [...found.slice(0, SHOWN), `… and ${found.length - SHOWN} more`] : found;
    t.same(shown, [], `${name(op)}: ${sent.get(name(op))} fuzzed requests`);
  }
  // Whatever was bought with whatever text, no command a game server fetches holds a control character (issue 44).
  const commands = await DeliveryQueue.select(app.db);
  t.ok(commands.length > 0, 'commands were queued');
  const escaped = (text: string) => JSON.stringify(text.slice(0, 200)).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  t.same(
    commands
      .map((c) => c.command)
      .filter(hasControlCharacter)
      .map(escaped),
    [],
    'no queued command holds a control character',
  );
  const health = await app.inject({ url: '/health' });
  t.equal(health.statusCode, 200, 'the server still answers');
  t.same(Object.keys(Object.prototype), [], 'no request polluted Object.prototype');
  const { sent: total, refused, served } = runner.counts;
  t.comment(`seed ${SEED}, ${ROUNDS} round(s): ${total} requests, ${refused} refused, ${served} served`);
});
