/**
 * Endpoints cannot reach inside: an address in a loopback, private, link-local, … range is refused
 * when it is set (a literal IP) and when it is called (a name that resolves to one), so nothing is
 * sent there and no answer from inside is shown; config's `outbound.allow` lets an owner's own
 * receivers through. A Discord announcement goes only to a Discord webhook address.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../../core/config.ts';
import { build, call } from '../../../test/helper.ts';
import { expectErrors } from '../../../test/fixtures.ts';
import { testTry } from './tries.ts';
import { RECEIVERS, startReceiver, type Receiver } from '../../../test/receiver.ts';
import { NotificationsEndpoint } from '../entities.ts';

const ENDPOINTS = '/api/admin/notifications/endpoints';
const DISCORD = 'https://discord.com/api/webhooks/123456789012345678/channel-token_1';

function app(t: Parameters<typeof build>[0], outbound?: { allow: string[] }): Promise<FastifyInstance> {
  return build(t, { features: ['users', 'credits', 'notifications'], config: { plugins: { notifications: { pollMs: 100 } }, outbound } });
}

async function receiver(t: { teardown(fn: () => unknown): void }): Promise<Receiver> {
  const r = await startReceiver();
  t.teardown(() => r.close());
  return r;
}

async function endpoint(a: FastifyInstance, url: string, kind = 'webhook'): Promise<{ id: string }> {
  const res = await call(a, ENDPOINTS, { body: { name: 'ERP', kind, url, events: ['credits.changed'] }, as: 'json' });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
}

t.test('an endpoint at an address inside is refused when it is set, naming the field; nothing is stored', async (t) => {
  const a = await app(t);
  const inside: [string, RegExp][] = [
    ['http://127.0.0.1:8080/hook', /127\.0\.0\.1 is a loopback address/],
    ['http://10.0.0.1/hook', /10\.0\.0\.1 is a private address/],
    ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a link-local address/],
    ['http://[::1]:8080/hook', /::1 is a loopback address/],
    ['http://[::ffff:127.0.0.1]/hook', /::ffff:7f00:1 is a loopback address/],
    ['https://2130706433/hook', /127\.0\.0\.1 is a loopback address/],
    ['http://0.0.0.0:8080/', /unspecified/],
    ['http://[::]/', /unspecified/],
    ['http://172.16.5.4/', /private/],
    ['http://192.168.1.1/', /private/],
    ['http://[fd00::1]/', /private/],
    ['http://100.64.0.1/', /shared \(CGNAT\)/],
    ['http://[fe80::1]/', /link-local/],
    ['http://224.0.0.1/', /multicast/],
    ['http://[::ffff:169.254.169.254]/', /link-local/],
    ['http://[64:ff9b::7f00:1]/', /IPv4-embedding/],
    ['http://[2002:7f00:1::1]/', /IPv4-embedding/],
  ];
  await expectErrors(
    t,
    a,
    inside.map(([url, message]) => ({
      url: ENDPOINTS,
      body: { name: 'x', url, events: ['credits.changed'] },
      status: 400,
      error: 'VALIDATION_ERROR',
      message,
    })),
  );
  for (const [url] of inside) {
    const res = await call(a, ENDPOINTS, { body: { name: 'x', url }, as: 'json' });
    t.match(res.json().message, /^url: .*outbound\.allow/, `${url}: the message names the field and the way out`);
  }
  t.same((await call(a, ENDPOINTS)).json(), [], 'nothing stored');

  const outside = await endpoint(a, 'https://93.184.215.14/hook');
  const moved = await call(a, `${ENDPOINTS}/${outside.id}`, { method: 'PATCH', body: { url: 'http://169.254.169.254/latest/meta-data/' }, as: 'json' });
  t.equal(moved.statusCode, 400);
  t.match(moved.json(), { error: 'VALIDATION_ERROR', message: /^url: 169\.254\.169\.254 is a link-local address/ });
  t.match((await call(a, `${ENDPOINTS}/${outside.id}`)).json(), { url: 'https://93.184.215.14/hook' }, 'a refused change changes nothing');
});

t.test('a name that resolves to an address inside is refused when it is called: nothing reaches it, no answer is shown', async (t) => {
  const a = await app(t);
  const r = await receiver(t);
  const port = new URL(r.url).port;
  const { id } = await endpoint(a, `http://localhost:${port}/hook`);
  const tried = await testTry(a, id);
  t.match(tried, { status: null, response: '', error: /^localhost resolves only to addresses the server does not call \(127\.0\.0\.1 is a loopback address/ });
  t.equal(r.received.length, 0, 'no request reached the receiver');

  // A row stored before the rule (or under another outbound.allow): checked again when it is sent.
  await NotificationsEndpoint.update(a.db, Number(id), { url: r.url });
  t.match(await testTry(a, id), { status: null, response: '', error: /^Not sent: 127\.0\.0\.1 is a loopback address/ });
  t.equal(r.received.length, 0, 'still none');
});

t.test("outbound.allow lets an owner's receivers through: by address or range, named or not", async (t) => {
  const a = await app(t, { allow: ['127.0.0.0/8'] });
  const r = await receiver(t);
  const byName = await endpoint(a, r.url.replace('127.0.0.1', 'localhost'));
  t.match(await testTry(a, byName.id), { status: '200', error: null }, 'a name resolving to a listed address');
  const byAddress = await endpoint(a, r.url);
  t.match(await testTry(a, byAddress.id), { status: '200', error: null }, 'a listed address');
  t.equal(r.received.length, 2);
  await expectErrors(t, a, [
    {
      url: ENDPOINTS,
      body: { name: 'x', url: 'http://10.0.0.1/hook' },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /10\.0\.0\.1 is a private address/,
    },
  ]);

  const one = await app(t, RECEIVERS);
  t.equal((await call(one, ENDPOINTS, { body: { name: 'x', url: r.url }, as: 'json' })).statusCode, 201, 'a single listed address');
  t.equal((await call(one, ENDPOINTS, { body: { name: 'x', url: 'http://127.0.0.2/' }, as: 'json' })).statusCode, 400, 'only that one');
  t.throws(
    () => loadConfig({}, { outbound: { allow: ['intranet'] } }),
    /outbound\.allow: "intranet" is not an IP address or CIDR range/,
    'a bad entry stops boot',
  );
});

t.test('a Discord announcement goes only to a Discord webhook address', async (t) => {
  const a = await app(t, RECEIVERS);
  const r = await receiver(t);
  const notDiscord = [
    r.url,
    'https://erp.example/hook',
    'http://discord.com/api/webhooks/1/x',
    'https://discord.com:8443/api/webhooks/1/x',
    'https://discord.com.evil.example/api/webhooks/1/x',
    'https://discord.com/api/users/@me',
    'https://evil.example/?https://discord.com/api/webhooks/1/x',
  ];
  await expectErrors(
    t,
    a,
    notDiscord.map((url) => ({
      url: ENDPOINTS,
      body: { name: 'x', kind: 'discord', url },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /^url: a Discord announcement goes to/,
    })),
  );
  for (const url of [DISCORD, 'https://discordapp.com/api/webhooks/1/abc', 'https://ptb.discord.com/api/v10/webhooks/1/abc?wait=true']) {
    t.equal((await call(a, ENDPOINTS, { body: { name: 'x', kind: 'discord', url }, as: 'json' })).statusCode, 201, url);
  }
  const hook = await endpoint(a, r.url);
  const res = await call(a, `${ENDPOINTS}/${hook.id}`, { method: 'PATCH', body: { kind: 'discord' }, as: 'json' });
  t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^url: a Discord announcement/ }, 'a kind changed alone is checked with the address kept');
  t.equal((await call(a, `${ENDPOINTS}/${hook.id}`, { method: 'PATCH', body: { kind: 'discord', url: DISCORD }, as: 'json' })).statusCode, 200);
});
