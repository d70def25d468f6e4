/**
 * `npm run test:cluster`: the multi-machine shape under a storm. Three Galera nodes, two server
 * instances behind HAProxy (docs/deployment/haproxy.cfg), game servers claiming deliveries; one
 * database node, then one instance, SIGKILLed mid-storm; meanwhile players pay, and each
 * payment's webhook arrives three times at once over both instances. FAULT_SECONDS as in faults.fault.ts.
 *
 * Each instance reaches the cluster through HAProxy's database listener of its own: its own node,
 * the others only as backups. The instances then write on different nodes (their conflicts meet
 * only in Galera's certification, the case a single server never shows), and killing instance 1's
 * node moves its new connections to another without restarting it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import t from 'tap';
import { GaleraCluster, HaProxy, fillTemplate, haveCluster } from '../cluster.ts';
import { freePort } from '../mariadb-server.ts';
import { checkDeliveries, pollers, queueDrained, seedDelivery } from './delivery.ts';
import { EXAMPLEPAY_PLUGIN, EXAMPLEPAY_SECRET, checkPayments, payers } from './payments.ts';
import { LISTED, ServerProcess, checkInvariants, seed, storm, type Outcome } from './storm.ts';

const seconds = Number(process.env.FAULT_SECONDS ?? 6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (!haveCluster()) {
  t.plan(0, 'needs mariadbd, galera-4 and haproxy (.ci/run installs them)');
} else {
  t.test('a Galera cluster and two instances behind HAProxy: a node and an instance SIGKILLed mid-storm, every 2xx durable, the books balance, commands and ' +
    'payments once', async (t) => {
    const started = Date.now();
    const cluster = await GaleraCluster.start();
    t.teardown(() => cluster.destroy());
    const clusterMs = Date.now() - started;
    await cluster.database(0, 'cluster');
    const [http, app1, app2, db1, db2] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    const proxy = await HaProxy.start(cluster.dir, fillTemplate('haproxy.cfg', {
      http: `127.0.0.1:${http}`, app1: `127.0.0.1:${app1}`, app2: `127.0.0.1:${app2}`, db1: `127.0.0.1:${db1}`, db2: `127.0.0.1:${db2}`,
      node1: cluster.address(0), node2: cluster.address(1), node3: cluster.address(2),
    }), async () => {
      for (const port of [db1, db2]) await (await createConnection({ host: '127.0.0.1', port, user: 'app', password: 'app' })).end();
      return true;
    });
    t.teardown(() => proxy.stop());

    // Short leases so the never-acking poller's rows come back within the test; enough tries that they never fail.
    const config = join(cluster.dir, 'config.json');
    writeFileSync(config, JSON.stringify({ plugins: { delivery: { enabled: true, leaseSeconds: 2, maxTries: 1000, sweepMs: 200 }, ...EXAMPLEPAY_PLUGIN } }));
    const env = { CONFIG: config, EXAMPLEPAY_SECRET };
    const instances = [new ServerProcess(app1, `mysql://app:app@127.0.0.1:${db1}/cluster`, env),
      new ServerProcess(app2, `mysql://app:app@127.0.0.1:${db2}/cluster`, env)];
    t.teardown(async () => { for (const s of instances) await s.stop('SIGKILL'); });
    // One at a time: the first migrates, the second finds the schema up to date.
    for (const s of instances) await s.start();
    const front = `http://127.0.0.1:${http}`;
    const servedBy = new Set<string>();
    for (let i = 0; i < 40 && servedBy.size < 2; i++) {
      const res = await fetch(`${front}/health`);
      if (res.ok) servedBy.add(res.headers.get('x-served-by') ?? '');
      await sleep(100);
    }
    t.same([...servedBy].sort(), ['app1', 'app2'], 'HAProxy sends requests to both instances');

    // The checks read on node 2, which survives; node 1 is the one killed.
    const checkUrl = `mysql://app:app@${cluster.address(1)}/cluster`;
    // Seeded through one instance: the other sees its settings change (registerLimit) only within
    // the settings' refresh, a few seconds.
    const world = await seed(instances[0]!.url, 6, 400);
    const token = await seedDelivery(instances[0]!.url, world.productId);
    const timeline = (async () => {
      await sleep(seconds * 300);
      await cluster.kill(0);
      await sleep(seconds * 300);
      await instances[1]!.stop('SIGKILL');
      await sleep(seconds * 300);
    })();
    const [outcomes, delivered, paid] = await Promise.all([
      storm(() => [front], world, 8, timeline, 53),
      pollers(() => front, token, timeline, () => queueDrained(checkUrl)),
      payers(() => front, world, timeline),
    ]);

    // Galera applies other nodes' commits a moment later: one causal read waits until node 2 has
    // applied everything committed anywhere, so the checks after it see it all.
    const barrier = await createConnection({ uri: checkUrl });
    await barrier.query('set session wsrep_sync_wait = 1');
    await barrier.query('select 1 from store_products limit 1');
    await barrier.end();
    // Cut off by a kill: no answer (an instance gone), or 503 from the instance whose node went
    // (a connection lost at its commit) or whose transaction lost certification once too often.
    const cut = (o: Outcome) => o.status === 0 || o.status === 503;
    const ok = outcomes.filter((o) => o.status >= 200 && o.status < 300);
    t.ok(ok.length > 50, `the storm did work (${ok.length} of ${outcomes.length} answered 2xx)`);
    t.same(outcomes.filter((o) => !cut(o) && !(o.status < 300 || (o.status === 400 && LISTED.has(o.error ?? ''))))
      .map((o) => `${o.op} ${o.status} ${o.error}`), [], 'every answer was a success, a listed refusal, or a request the kills cut off');
    t.ok(outcomes.filter((o) => o.status === 503).every((o) => o.error === 'SERVICE_UNAVAILABLE' && o.retryAfter === '2'),
      '503s carry SERVICE_UNAVAILABLE and Retry-After');
    t.ok(outcomes.filter((o) => o.op === 'buy' && o.status === 200).length > 10, 'purchases were made');
    t.equal((await fetch(`${instances[0]!.url}/health`)).status, 200, 'the instance whose node died serves on through another node');
    const { problems: books, counts } = await checkInvariants(checkUrl, world, outcomes);
    t.same(books, [], `every 2xx durable, balances equal ledgers, stock equals start minus sold (${JSON.stringify(counts)})`);
    const { problems, counts: deliveries } = await checkDeliveries(checkUrl, delivered);
    t.same(problems, [], `each command handed out once (${JSON.stringify(deliveries)})`);
    const { problems: payments, counts: paymentCounts } = await checkPayments(checkUrl, paid);
    t.ok(paymentCounts.completed! > 5, 'payments were made');
    t.same(payments, [], `no payment credited twice (${JSON.stringify(paymentCounts)})`);
    const status = await cluster.status(1);
    t.equal(Number(status.wsrep_cluster_size), 2, 'the two nodes left form the cluster');
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    const count = (f: (o: Outcome) => boolean) => outcomes.filter(f).length;
    t.comment(`cluster up in ${clusterMs} ms, whole test ${Date.now() - started} ms; ${outcomes.length} requests, ms median ${ms[ms.length >> 1]}, 90th ` +
      `${ms[Math.floor(ms.length * 0.9)]}, max ${ms.at(-1)}; `
      + `cut off: ${count((o) => o.status === 0)} unanswered, ${count((o) => o.status === 503 && /unavailable/.test(o.message ?? ''))} × 503 database ` +
        `unavailable, `
      + `${count((o) => o.status === 503 && /busy/.test(o.message ?? ''))} × 503 busy; node 2: ${status.wsrep_local_cert_failures} certification failures, ` +
        `${status.wsrep_local_bf_aborts} local transactions aborted by replicated ones`);
  });
}
