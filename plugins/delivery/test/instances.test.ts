import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY, build, sharedDatabaseUrl, type TestLike } from '../../../test/helper.ts';
import { until } from '../../../test/fixtures.ts';
import { DELIVERY_FEATURES, addCommand, backgroundRounds, buy, makeCategory, makeProduct, makeServer, makeUser } from './fixtures.ts';

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

t.test("a buy on one instance wakes a game server's stream on another at that one's next round", async (t) => {
  const url = await sharedDatabaseUrl(t);
  const config = { plugins: { delivery: { crossWakeMs: 200 } } };
  const a = await build(t, { features: DELIVERY_FEATURES, databaseUrl: url, config });
  const b = await build(t, { features: DELIVERY_FEATURES, databaseUrl: url, config });
  const server = await makeServer(a);
  const category = await makeCategory(a, { name: 'Items' });
  const sword = await makeProduct(a, { categoryID: category, name: 'Sword', price: '1' });
  await addCommand(a, sword, { serverID: server.id, trigger: 'purchase', command: 'give {username} sword' });
  const steve = await makeUser(a, 'steve', 10_000);

  const rounds = backgroundRounds(b, 'wakeForOthers');
  const events = await workEvents(t, b, server.token);
  await until(() => events.length >= 1);
  // Two of b's rounds over the stream with nothing new: they wake nobody.
  const connected = rounds();
  await until(() => rounds() >= connected + 2);
  const before = events.length;
  t.ok(before >= 1, 'woken once at connect');
  const bought = rounds();
  t.equal((await buy(a, { userID: steve, products: [sword] })).statusCode, 200);
  await until(() => events.length > before);
  // A round under way at the buy may miss it, the next sees it, and its wake-up reaches the stream as one more may end.
  t.ok(rounds() - bought <= 3, `woken from the other instance by its next round (${rounds() - bought} rounds after the buy ended)`);
  const woken = rounds();
  await until(() => rounds() >= woken + 3);
  t.equal(events.length, before + 1, 'and only once for one buy');
});
