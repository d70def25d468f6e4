/**
 * Discord announcements, with Discord's webhook address answered by nock: a purchase and a new ticket
 * as readable embeds, worded by the built-in templates or an owner's, and templates that only
 * name values (nothing in them runs, and a player's name cannot ping a channel).
 */
import nock from 'nock';
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { created, makeCategory, makeProduct, makeUser } from '../../../test/fixtures.ts';
import { offline } from '../../../test/gateways.ts';
import type { Received } from '../../../test/receiver.ts';

offline(t);

interface Embed {
  title: string;
  description: string;
  timestamp: string;
}

const WEBHOOK = '/api/webhooks/123456789012345678/channel-token';

/** A Discord channel's webhook: what it was sent, and a wait for the nth message. */
interface Channel {
  received: Pick<Received, 'headers' | 'body'>[];
  waitFor(count: number): Promise<void>;
}

function channel(): Channel {
  const received: Channel['received'] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  // Discord answers a webhook post with 204.
  const scope = nock('https://discord.com').persist().post(WEBHOOK).reply(204);
  // nock hands over the request as fetch's Request: its headers, lower-cased, as node:http gives them.
  scope.on('request', (req: Request, _interceptor: unknown, body: string) => {
    received.push({ headers: Object.fromEntries(req.headers), body });
    for (const w of waiting.filter((x) => received.length >= x.count)) w.resolve();
  });
  return {
    received,
    waitFor: (count) =>
      received.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => {
            waiting.push({ count, resolve });
          }),
  };
}

async function discord(t: Parameters<typeof build>[0]): Promise<{ app: FastifyInstance; channel: Channel }> {
  const app = await build(t, {
    features: ['users', 'credits', 'store', 'support', 'notifications'],
    config: { plugins: { notifications: { pollMs: 100 } }, site: { currency: 'EUR' } },
  });
  await created(
    app,
    '/api/admin/notifications/endpoints',
    {
      name: '#shop',
      kind: 'discord',
      url: `https://discord.com${WEBHOOK}`,
      events: ['store.order.completed', 'support.ticket.created'],
    },
    'json',
  );
  return { app, channel: channel() };
}

const message = (channel: Channel, i: number) => JSON.parse(channel.received[i]!.body) as { embeds: Embed[]; allowed_mentions: unknown };

t.test('a purchase and a new ticket are announced as embeds: who, what, how much', async (t) => {
  const { app, channel } = await discord(t);
  const ranks = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '12.50' });
  const steve = await makeUser(app, 'Steve', 10_000);
  t.equal((await call(app, '/api/store/buy', { body: { userID: String(steve), products: [{ id: vip, quantity: 2 }] }, as: 'json' })).statusCode, 200);
  await channel.waitFor(1);
  const [embed] = message(channel, 0).embeds;
  t.equal(embed!.title, 'New purchase');
  t.equal(embed!.description, '**Steve** bought 2 × VIP for **25.00 EUR**.');
  t.match(embed!.timestamp, /^\d{4}-\d\d-\d\dT/);
  t.same(message(channel, 0).allowed_mentions, { parse: [] }, 'nobody is pinged');
  t.equal(channel.received[0]!.headers['content-type'], 'application/json');

  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Help' } })).json();
  const ticket = await call(app, '/api/support/tickets', { body: { accountID: String(steve), categoryID: category.id, title: 'Rank', message: 'Where?' } });
  t.equal(ticket.statusCode, 200);
  await channel.waitFor(2);
  t.match(message(channel, 1).embeds[0], { title: /^New ticket #\d+$/, description: '**Steve** asks: Rank' });
});

t.test("an owner's template words the announcement; it names values and runs nothing", async (t) => {
  const { app, channel } = await discord(t);
  const put = await call(app, '/api/admin/notifications/templates/store.order.completed', {
    method: 'PUT',
    as: 'json',
    body: { title: '{{username}} supports us', body: '{{items}} · {{total}} {{currency}} {{constructor}}{{__proto__}}#{process.exit()} {{ orderId }}' },
  });
  t.equal(put.statusCode, 200);
  t.match(put.json(), { event: 'store.order.completed', custom: true });
  const refused = await call(app, '/api/admin/notifications/templates/store.nothing', { method: 'PUT', as: 'json', body: { title: 'x', body: 'y' } });
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().error, 'NOTIFICATION_UNKNOWN_EVENT');

  const ranks = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '3' });
  const steve = await makeUser(app, '@everyone', 1_000);
  const order = (await call(app, '/api/store/buy', { body: { userID: String(steve), products: [String(vip)] }, as: 'json' })).json();
  await channel.waitFor(1);
  const [embed] = message(channel, 0).embeds;
  t.equal(embed!.title, '@everyone supports us');
  t.equal(embed!.description, `1 × VIP · 3.00 EUR #{process.exit()} ${order.orderID}`, 'unknown and inherited names are empty, nothing else is read');
  t.same(message(channel, 0).allowed_mentions, { parse: [] }, 'a name like @everyone pings nobody');

  const reset = await call(app, '/api/admin/notifications/templates/store.order.completed', { method: 'PUT', as: 'json', body: { title: '', body: '' } });
  t.match(reset.json(), { title: 'New purchase', custom: false }, 'empty goes back to the built-in wording');
  t.match(
    (await call(app, '/api/admin/audit?action=notifications.template.')).json(),
    [
      {
        action: 'notifications.template.update',
        targetID: 'store.order.completed',
        summary: 'Restored the built-in wording of store.order.completed',
        before: { title: '{{username}} supports us' },
      },
      { action: 'notifications.template.update', summary: 'Changed the wording of store.order.completed', after: { title: '{{username}} supports us' } },
    ],
    'both changes are in the audit log, the refused one is not',
  );
});
