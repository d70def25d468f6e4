/**
 * An owner's relay in front of Discord (a self-hosted webhook proxy): a Discord endpoint may point
 * at it once config's `plugins.notifications.discordHosts` lists its host (and `outbound.allow` its
 * address, when it is inside), and the announcement reaches it in Discord's shape. Without the
 * listing, or at a host not listed, a Discord endpoint is refused as before, and a relay taken off
 * the list is not called any more.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../core/app.ts';
import { build, call, sharedDatabaseUrl } from '../../../test/helper.ts';
import { expectErrors } from '../../../test/fixtures.ts';
import { testTry } from './tries.ts';
import { RECEIVERS, startDiscordRelay, type DiscordRelay } from '../../../test/receiver.ts';
import { EndpointAddresses } from '../addresses.ts';
import { OutboundPolicy } from '../../../core/outbound.ts';

const ENDPOINTS = '/api/admin/notifications/endpoints';
const NOT_DISCORD = /^url: a Discord announcement goes to a Discord webhook address .*plugins\.notifications\.discordHosts/;

function app(t: Parameters<typeof build>[0], config: object, databaseUrl?: string): Promise<FastifyInstance> {
  return build(t, { features: ['users', 'credits', 'notifications'], databaseUrl, config: { plugins: { notifications: { pollMs: 100 } }, ...config } });
}

async function relay(t: { teardown(fn: () => unknown): void }): Promise<DiscordRelay> {
  const r = await startDiscordRelay();
  t.teardown(() => r.close());
  return r;
}

t.test('a Discord endpoint at a relay is refused until discordHosts lists it; then the announcement reaches the relay in Discord’s shape', async (t) => {
  const r = await relay(t);
  const plain = await app(t, { outbound: RECEIVERS });
  await expectErrors(t, plain, [{ url: ENDPOINTS, body: r.endpoint(['credits.changed']), status: 400, error: 'VALIDATION_ERROR', message: NOT_DISCORD }]);
  t.same((await call(plain, ENDPOINTS)).json(), [], 'nothing stored');

  const listed = await app(t, r.config);
  const created = await call(listed, ENDPOINTS, { body: r.endpoint(['credits.changed']), as: 'json' });
  t.equal(created.statusCode, 201, created.body);
  t.match(await testTry(listed, created.json().id), { status: '204', error: null }, 'the relay answered as Discord does');
  t.equal(r.received.length, 1);
  const [got] = r.received;
  t.equal(got!.method, 'POST');
  t.equal(got!.path, new URL(r.url).pathname);
  t.equal(got!.headers['content-type'], 'application/json');
  t.match(JSON.parse(got!.body), {
    allowed_mentions: { parse: [] },
    embeds: [{ title: 'Test announcement', description: 'Announcements reach this channel.', timestamp: /^\d{4}-\d\d-\d\dT/ }],
  });

  // As Discord's webhook address does, the relay takes only a POST of a channel's webhook path.
  t.equal((await fetch(new URL('/hook', r.url), { method: 'POST', body: '{}' })).status, 404);
  t.equal((await fetch(r.url)).status, 404);

  const { host, port } = new URL(r.url);
  const elsewhere = [
    `http://127.0.0.1:${Number(port) + 1}/api/webhooks/1/x`,
    `http://localhost:${port}/api/webhooks/1/x`,
    `http://127.0.0.1/api/webhooks/1/x`,
    `http://${host}/hook`,
    `http://${host}/api/users/@me`,
    'http://discord.com/api/webhooks/1/x',
    'https://discord.com:8443/api/webhooks/1/x',
  ];
  await expectErrors(
    t,
    listed,
    elsewhere.map((url) => ({ url: ENDPOINTS, body: { name: 'x', kind: 'discord', url }, status: 400, error: 'VALIDATION_ERROR', message: NOT_DISCORD })),
  );
  for (const url of [`https://${host}/api/v10/webhooks/1/abc?wait=true`, 'https://discord.com/api/webhooks/1/abc']) {
    t.equal((await call(listed, ENDPOINTS, { body: { name: 'x', kind: 'discord', url }, as: 'json' })).statusCode, 201, url);
  }

  const notAllowed = await app(t, { plugins: { notifications: r.config.plugins.notifications } });
  await expectErrors(t, notAllowed, [
    {
      url: ENDPOINTS,
      body: r.endpoint(['credits.changed']),
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /^url: 127\.0\.0\.1 is a loopback address, which the server does not call unless outbound\.allow/,
    },
  ]);
});

t.test('a relay taken off discordHosts is not called any more', async (t) => {
  const r = await relay(t);
  const url = await sharedDatabaseUrl(t);
  const before = await app(t, r.config, url);
  const { id } = (await call(before, ENDPOINTS, { body: r.endpoint(['credits.changed']), as: 'json' })).json();
  await before.close();
  const after = await app(t, { outbound: RECEIVERS }, url);
  t.match(await testTry(after, id), { status: null, error: /^Not sent: a Discord announcement goes to a Discord webhook address/ });
  t.equal(r.received.length, 0, 'nothing reached the relay');
});

t.test('discordHosts entries are host names with an optional port; anything else stops boot naming the setting', async (t) => {
  const addresses = new EndpointAddresses(new OutboundPolicy([]), ['Relay.Example', 'relay.example:8443', '[2001:db8::1]:3000', 'plain.example:80']);
  const accepted = [
    'https://relay.example/api/webhooks/1/x',
    'http://RELAY.example/api/webhooks/1/x',
    'https://relay.example:8443/api/webhooks/1/x',
    'http://[2001:db8::1]:3000/api/webhooks/1/x',
    'http://plain.example/api/webhooks/1/x',
    'https://plain.example:80/api/webhooks/1/x',
  ];
  for (const url of accepted) t.equal(addresses.problem('discord', url), undefined, url);
  const refused = ['https://relay.example:8080/api/webhooks/1/x', 'https://relay.example.evil/api/webhooks/1/x', 'http://[2001:db8::1]/api/webhooks/1/x'];
  for (const url of refused) t.match(addresses.problem('discord', url), NOT_DISCORD, url);

  for (const entry of ['https://relay.example', 'relay.example/api', 'me@relay.example', 'relay.example:99999', 'relay.example:', ' relay.example', '']) {
    t.throws(
      () => new EndpointAddresses(new OutboundPolicy([]), [entry]),
      {
        message: `Invalid setting plugins.notifications.discordHosts: "${entry}" is not a host name with an optional port (relay.example or relay.example:8080).`,
      },
      JSON.stringify(entry),
    );
  }
  await t.rejects(
    buildApp({
      env: { DATABASE_URL: 'sqlite::memory:' },
      config: { log: { level: 'silent' }, plugins: { notifications: { discordHosts: ['http://relay/'] } } },
    }),
    {
      message:
        'Invalid setting plugins.notifications.discordHosts: "http://relay/" is not a host name with an optional port (relay.example or relay.example:8080).',
    },
  );
  await t.rejects(
    buildApp({
      env: { DATABASE_URL: 'sqlite::memory:' },
      config: { log: { level: 'silent' }, plugins: { notifications: { discordHosts: [{ host: 'relay' }] } } },
    }),
    {
      message: 'Invalid setting plugins.notifications.discordHosts.0: Expected string',
    },
  );
});
