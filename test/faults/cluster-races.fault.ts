/**
 * `npm run test:cluster`, beside cluster.fault.ts: the three checks that once leaned on a locking read
 * of a row they did not write, raced over two instances on two Galera nodes. A lock holds on its own
 * node only; what must hold across nodes is decided by writes that certification compares.
 */
import type { FastifyInstance } from 'fastify';
import { createConnection } from 'mysql2/promise';
import t from 'tap';
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
  t.test('two instances on two Galera nodes: the bazaar cap, a server\'s delete and a category\'s delete hold against racing writes', async (t) => {
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
    t.same(adds.filter((r) => r.statusCode !== 200 && !(r.statusCode === 400 && r.json().error === 'INSERT_ERROR')).map((r) => r.body), [],
      'every add stored or refused as full');
    for (const url of urls) await caughtUp(url);
    const stored: number[] = [];
    for (const id of players) stored.push((await call(a, `/api/bazaar/storages/${id}/items`)).json().length);
    t.same(stored, players.map(() => 10), 'the cap of 10 holds for every player');

    // A server deleted on one node while players store their first item on it on the other.
    const stranded: number[] = [];
    for (let round = 0; round < 6; round++) {
      const id = (await call(a, '/api/admin/bazaar/servers', { body: { name: `Round ${round}` } })).json().id;
      await caughtUp(urls[1]!);
      const at = (2 * round + 3) % 9;
      await overBoth(apps, 9, (app, i) => i === at
        ? call(app, `/api/admin/bazaar/servers/${id}`, { method: 'DELETE' })
        : call(app, `/api/bazaar/storages/${players[i % players.length]}/items`, { body: { ...item, serverID: id }, as: 'json' }));
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
      await overBoth(apps, 9, (app: FastifyInstance, i) => i === at
        ? call(app, `/api/admin/support/categories/${category}`, { method: 'DELETE' })
        : call(app, '/api/support/tickets', { as: 'json', body: { accountID: player, categoryID: category, title: 'Help', message: 'Hello' } }));
      for (const url of urls) await caughtUp(url);
      const gone = (await call(b, `/api/support/categories/${category}`)).statusCode === 404;
      const left = (await call(b, `/api/support/tickets?categoryID=${category}`)).json().length;
      if (gone && left > 0) orphans.push(left);
    }
    t.same(orphans, [], 'no ticket is left in a deleted category');
    const status = await cluster.status(1);
    t.comment(`whole test ${Date.now() - started} ms; node 2: ${status.wsrep_local_cert_failures} certification failures`);
  });
}
