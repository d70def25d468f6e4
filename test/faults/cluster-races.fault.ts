/**
 * `npm run test:cluster`, beside cluster.fault.ts: the three checks that once leaned on a locking read
 * of a row they did not write, raced over two instances on two Galera nodes. A lock holds on its own
 * node only; what must hold across nodes is decided by writes that certification compares.
 */
import type { FastifyInstance } from 'fastify';
import { createConnection } from 'mysql2/promise';
import t from 'tap';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser } from '../../plugins/delivery/test/fixtures.ts';
import { GaleraCluster, haveCluster } from '../cluster.ts';
import { newUser } from '../fixtures.ts';
import { build, call, overBoth } from '../helper.ts';

/** Waits until the node behind `url` has applied every commit made anywhere (a causal read). */
async function caughtUp(url: string): Promise<void> {
  const conn = await createConnection({ uri: url });
  await conn.query('set session wsrep_sync_wait = 1');
  await conn.query('select 1');
  await conn.end();
}

if (!haveCluster()) {
  t.plan(0, 'needs mariadbd, galera-4 and haproxy (.ci/run installs them)');
} else {
  t.test("two instances on two Galera nodes: the bazaar cap, a server's delete and a category's delete hold against racing writes", async (t) => {
    const started = Date.now();
    const cluster = await GaleraCluster.start(2);
    t.teardown(() => cluster.destroy());
    const urls = [await cluster.database(0, 'races'), `mysql://app:app@${cluster.address(1)}/races`];
    const config = { plugins: { bazaar: { maxItemsPerServer: 10 } } };
    const features = ['users', 'bazaar', 'support'];
    const a = await build(t, { features, databaseUrl: urls[0], config });
    // The second finds the schema the first migrated, once its node has applied it.
    await caughtUp(urls[1]!);
    const b = await build(t, { features, databaseUrl: urls[1], config });
    const apps = [a, b] as const;

    // Eight players on two servers: each storage's place for its tenth item raced for over both nodes.
    const players: number[] = [];
    for (let k = 0; k < 8; k++) players.push((await newUser(a, `player${k}`)).id);
    const servers: string[] = [];
    for (const name of ['Survival', 'Creative']) servers.push((await call(a, '/api/admin/bazaar/servers', { body: { name } })).json().id);
    await caughtUp(urls[1]!);
    const item = { itemID: 'DIAMOND', amount: '1', durability: '0', maxDurability: '0', base64: 'rO0A' };
    // 20 adds for each player, spread over both nodes, all at once.
    const adds = await overBoth(apps, 20 * players.length, (app, i) => {
      const k = (i >> 1) % players.length;
      return call(app, `/api/bazaar/storages/${players[k]}/items`, { body: { ...item, serverID: servers[k % 2] }, as: 'json' });
    });
    t.same(
      adds.filter((r) => r.statusCode !== 200 && !(r.statusCode === 400 && r.json().error === 'INSERT_ERROR')).map((r) => r.body),
      [],
      'every add stored or refused as full',
    );
    for (const url of urls) await caughtUp(url);
    const stored: number[] = [];
    for (const id of players) stored.push((await call(a, `/api/bazaar/storages/${id}/items`)).json().length);
    t.same(
      stored,
      players.map(() => 10),
      'the cap of 10 holds for every player',
    );

    // A server deleted on one node while players store their first item on it on the other.
    const stranded: number[] = [];
    for (let round = 0; round < 6; round++) {
      const id = (await call(a, '/api/admin/bazaar/servers', { body: { name: `Round ${round}` } })).json().id;
      await caughtUp(urls[1]!);
      const at = (2 * round + 3) % 9;
      await overBoth(apps, 9, (app, i) =>
        i === at
          ? call(app, `/api/admin/bazaar/servers/${id}`, { method: 'DELETE' })
          : call(app, `/api/bazaar/storages/${players[i % players.length]}/items`, { body: { ...item, serverID: id }, as: 'json' }),
      );
      for (const url of urls) await caughtUp(url);
      if ((await call(b, `/api/admin/bazaar/servers/${id}`)).statusCode !== 404) continue;
      let left = 0;
      for (const owner of players) left += (await call(b, `/api/bazaar/storages/${owner}/items?serverID=${id}`)).json().length;
      if (left > 0) stranded.push(left);
    }
    t.same(stranded, [], 'no item is left on a deleted server');

    const player = String(players[0]);
    const orphans: number[] = [];
    for (let round = 0; round < 8; round++) {
      const category = (await call(a, '/api/admin/support/categories', { body: { name: `Round ${round}` } })).json().id;
      await caughtUp(urls[1]!);
      // Tickets opened on both nodes; the delete among them, on either node.
      const at = (2 * round + 3) % 9;
      await overBoth(apps, 9, (app: FastifyInstance, i) =>
        i === at
          ? call(app, `/api/admin/support/categories/${category}`, { method: 'DELETE' })
          : call(app, '/api/support/tickets', { as: 'json', body: { accountID: player, categoryID: category, title: 'Help', message: 'Hello' } }),
      );
      for (const url of urls) await caughtUp(url);
      const gone = (await call(b, `/api/support/categories/${category}`)).statusCode === 404;
      const left = (await call(b, `/api/support/tickets?categoryID=${category}`)).json().length;
      if (gone && left > 0) orphans.push(left);
    }
    t.same(orphans, [], 'no ticket is left in a deleted category');
    const status = await cluster.status(1);
    t.comment(`whole test ${Date.now() - started} ms; node 2: ${status.wsrep_local_cert_failures} certification failures`);
  });

  t.test('claims through one Galera node, acks through the other at once: every ack settles what it names, no command is handed out twice', async (t) => {
    const started = Date.now();
    const cluster = await GaleraCluster.start(2);
    t.teardown(() => cluster.destroy());
    const urls = [await cluster.database(0, 'acks'), `mysql://app:app@${cluster.address(1)}/acks`];
    // A lease far longer than the test: a row the ack did not settle stays claimed, where the check finds it.
    const config = { plugins: { delivery: { leaseSeconds: 600 } } };
    const a = await build(t, { features: DELIVERY_FEATURES, databaseUrl: urls[0], config });
    await caughtUp(urls[1]!);
    const b = await build(t, { features: DELIVERY_FEATURES, databaseUrl: urls[1], config });
    const server = await makeServer(a);
    const product = await makeProduct(a, { categoryID: await makeCategory(a, { name: 'Items' }), name: 'Gem', price: '1' });
    await addCommand(a, product, { serverID: server.id, trigger: 'purchase', command: 'give {username} gem', perUnit: true });
    const steve = await makeUser(a, 'steve', 1_000_000);
    const buys = 30;
    for (let i = 0; i < buys; i++) t.equal((await buy(a, { userID: steve, products: [{ id: product, quantity: 100 }] })).statusCode, 200);
    await caughtUp(urls[1]!);

    // Four pollers claiming on node 1 and acking on node 2 the moment the claim answers, as a plugin
    // behind a load balancer that spreads its calls over two instances on two nodes would.
    // Writes on two nodes abort each other now and then (the spread layout docs/deployment.md
    // advises against); a 503 changed nothing, and the plugin sends the same call again, as here.
    const handed: string[] = [];
    const refused: string[] = [];
    let busy = 0;
    const send = async (app: FastifyInstance, url: string, body: Record<string, unknown>) => {
      for (;;) {
        const res = await call(app, url, { body, as: 'json' });
        if (res.statusCode !== 503) return res;
        busy++;
      }
    };
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        for (;;) {
          const claimed = await send(a, '/api/delivery/claim', { token: server.token, limit: '10' });
          if (claimed.statusCode !== 200) throw new Error(`claim answered ${claimed.statusCode}: ${claimed.body}`);
          const ids = (claimed.json().commands as { id: string }[]).map((c) => c.id);
          if (ids.length === 0) return;
          handed.push(...ids);
          const acked = await send(b, '/api/delivery/ack', { token: server.token, ids, result: 'done' });
          if (acked.statusCode !== 200 || acked.json().ids.length !== ids.length) refused.push(`${acked.statusCode} ${acked.body}`);
        }
      }),
    );
    for (const url of urls) await caughtUp(url);
    t.same(refused, [], 'every ack settled every row it named');
    t.equal(handed.length, buys * 100, 'every command was handed out');
    t.equal(new Set(handed).size, handed.length, 'none twice');
    const conn = await createConnection({ uri: urls[1]! });
    const [rows] = await conn.query('select status, count(*) as n from delivery_queue group by status');
    await conn.end();
    t.same(
      (rows as { status: string; n: number }[]).map((r) => `${r.status} ${r.n}`),
      [`done ${buys * 100}`],
      'every row done: none left claimed, to go out again when its lease ends',
    );
    const status = await cluster.status(1);
    t.comment(
      `whole test ${Date.now() - started} ms; ${handed.length} commands, ${busy} calls answered 503 and sent again; node 2: ` +
        `${status.wsrep_local_cert_failures} certification failures`,
    );
  });
}
