import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY, build, sharedDatabaseUrl, type TestLike } from '../../../test/helper.ts';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser } from './fixtures.ts';

/** The times at which a stream's `work` events arrive, until the test ends. */
async function workEvents(t: TestLike, app: FastifyInstance, token: string): Promise<number[]> {
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const stop = new AbortController();
  t.teardown(() => stop.abort());
  const res = await fetch(`${address}/api/delivery/stream?token=${token}`, { headers: { 'x-api-key': ADMIN_KEY }, signal: stop.signal });
  const at: number[] = [];
  void (async () => {
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      for (let i = chunk.indexOf('event: work'); i >= 0; i = chunk.indexOf('event: work', i + 1)) at.push(Date.now());
    }
  })().catch(() => {
    /* aborted at the end */
  });
  return at;
}

t.test("a buy on one instance wakes a game server's stream on another within a second", async (t) => {
  const url = await sharedDatabaseUrl(t);
  const config = { plugins: { delivery: { crossWakeMs: 200 } } };
  const a = await build(t, { features: DELIVERY_FEATURES, databaseUrl: url, config });
  const b = await build(t, { features: DELIVERY_FEATURES, databaseUrl: url, config });
  const server = await makeServer(a);
  const category = await makeCategory(a, { name: 'Items' });
  const sword = await makeProduct(a, { categoryID: category, name: 'Sword', price: '1' });
  await addCommand(a, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' });
  const steve = await makeUser(a, 'steve', 10_000);

  const events = await workEvents(t, b, server.token);
  await new Promise((r) => setTimeout(r, 600));
  const before = events.length;
  t.ok(before >= 1, 'woken once at connect');
  const bought = Date.now();
  t.equal((await buy(a, { userID: steve, products: [sword] })).statusCode, 200);
  for (let i = 0; i < 150 && events.length === before; i++) await new Promise((r) => setTimeout(r, 10));
  const woke = events[before];
  t.ok(woke !== undefined && woke - bought < 1000, `woken from the other instance within a second (${woke === undefined ? 'never' : `${woke - bought} ms`})`);
  await new Promise((r) => setTimeout(r, 600));
  t.equal(events.length, before + 1, 'and only once for one buy');
});
