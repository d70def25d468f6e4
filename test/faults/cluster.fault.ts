/**
 * `npm run test:cluster`: the multi-machine shape under a storm, on the layout docs/deployment.md
 * ships. Three Galera nodes, two server instances behind HAProxy (docs/deployment/haproxy.cfg) that
 * write through one node at a time, game servers claiming deliveries; players pay, and each
 * payment's webhook arrives three times at once over both instances. Both instances start at
 * once on an empty database (the first test also starts two more at once, each through a node of
 * its own). Then either the writer node and one instance are SIGKILLed mid-storm, or the writer
 * node is cut off from the others (Galera's gmcast.isolate) and must leave rotation.
 * FAULT_SECONDS as in faults.fault.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import t, { type Test } from 'tap';
import { rootDir } from '../../core/config.ts';
import { GaleraCluster, HaProxy, fillTemplate, haveCluster } from '../cluster.ts';
import { freePort } from '../mariadb-server.ts';
import { checkDeliveries, pollers, queueDrained, seedDelivery } from './delivery.ts';
import { EXAMPLEPAY_PLUGIN, EXAMPLEPAY_SECRET, type PaymentOutcome, checkPayments, payers } from './payments.ts';
import { LISTED, type Outcome, ServerProcess, checkInvariants, phase, seed, storm } from './storm.ts';

const seconds = Number(process.env.FAULT_SECONDS ?? 6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * How long the cluster and HAProxy may take to drop a lost node: Galera's view change (the others
 * wait evs.suspect_timeout, 5 s, for a silent member), two failed checks 500 ms apart, reconnects,
 * and the instances' health checks rising again; on a busy 2-core machine.
 */
const FAILOVER_MS = 12_000;

/** The shipped layout on one machine: the cluster, HAProxy from the shipped file, both instances started at the same moment. */
async function deploy(t: Test) {
  const started = Date.now();
  const cluster = await GaleraCluster.start();
  t.teardown(() => cluster.destroy());
  const clusterMs = Date.now() - started;
  await cluster.database(0, 'cluster');
  const [http, app1, app2, db] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const proxy = await HaProxy.start(
    cluster.dir,
    fillTemplate('haproxy.cfg', {
      http: `127.0.0.1:${http}`,
      app1: `127.0.0.1:${app1}`,
      app2: `127.0.0.1:${app2}`,
      db: `127.0.0.1:${db}`,
      check: join(rootDir, 'docs/deployment/galera-check.sh'),
      errorfile: join(rootDir, 'docs/deployment/haproxy-503.http'),
      node1: cluster.address(0),
      node2: cluster.address(1),
      node3: cluster.address(2),
    }),
    async () => {
      await (await createConnection({ host: '127.0.0.1', port: db, user: 'app', password: 'app' })).end();
      return true;
    },
  );
  t.teardown(() => proxy.stop());

  // Short leases so the never-acking poller's rows come back within the test; enough tries that they never fail.
  const config = join(cluster.dir, 'config.json');
  writeFileSync(config, JSON.stringify({ plugins: { delivery: { enabled: true, leaseSeconds: 2, maxTries: 1000, sweepMs: 200 }, ...EXAMPLEPAY_PLUGIN } }));
  const env = { CONFIG: config, EXAMPLEPAY_SECRET };
  const instances = [
    new ServerProcess(app1, `mysql://app:app@127.0.0.1:${db}/cluster`, env),
    new ServerProcess(app2, `mysql://app:app@127.0.0.1:${db}/cluster`, env),
  ];
  t.teardown(async () => {
    for (const s of instances) await s.stop('SIGKILL');
  });
  // As a process manager starts replicas: together, on an empty database. One migrates, the other waits for it.
  await Promise.all(instances.map((s) => s.start()));
  const front = `http://127.0.0.1:${http}`;
  const servedBy = new Set<string>();
  for (let i = 0; i < 40 && servedBy.size < 2; i++) {
    const res = await fetch(`${front}/health`);
    if (res.ok) servedBy.add(res.headers.get('x-served-by') ?? '');
    await sleep(100);
  }
  t.same([...servedBy].sort(), ['app1', 'app2'], 'both instances started at once and serve behind HAProxy');
  t.same(await migratedTwice(`mysql://app:app@${cluster.address(1)}/cluster`), [], 'every migration applied once, the migration lock let go');
  return { cluster, instances, front, clusterMs, started };
}

/** Migrations recorded more than once, and a migration lock left held, read causally on the node `url` names. */
async function migratedTwice(url: string): Promise<unknown[]> {
  const conn = await createConnection({ uri: url });
  try {
    await conn.query('set session wsrep_sync_wait = 1');
    const [twice] = await conn.query('select name from core_migrations group by name having count(*) > 1');
    const [held] = await conn.query('select owner from core_migration_lock');
    return [...(twice as unknown[]), ...(held as unknown[])];
  } finally {
    await conn.end();
  }
}

/** Waits until the node behind `url` has applied every commit made anywhere (a causal read), so the checks after it see it all. */
async function caughtUp(url: string): Promise<void> {
  const barrier = await createConnection({ uri: url });
  await barrier.query('set session wsrep_sync_wait = 1');
  await barrier.query('select 1 from store_products limit 1');
  await barrier.end();
}

/** Failed answers: none, a 5xx, or a refusal no client expects. */
const failed = (o: Outcome) => o.status === 0 || o.status >= 500 || (o.status >= 300 && !(o.status === 400 && LISTED.has(o.error ?? '')));

function summary(outcomes: Outcome[]): string {
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  const count = (f: (o: Outcome) => boolean) => outcomes.filter(f).length;
  return (
    `${outcomes.length} requests, ms median ${ms[ms.length >> 1]}, 90th ${ms[Math.floor(ms.length * 0.9)]}, max ${ms.at(-1)}; ` +
    `${count((o) => o.status === 0)} unanswered, ${count((o) => o.status === 503 && /busy/.test(o.message ?? ''))} × 503 busy, ` +
    `${count((o) => o.status === 503 && !/busy/.test(o.message ?? ''))} × 503 unavailable`
  );
}

if (!haveCluster()) {
  t.plan(0, 'needs mariadbd, galera-4 and haproxy (.ci/run installs them)');
} else {
  t.test(
    'the writer node and an instance SIGKILLed mid-storm: every 2xx durable, the books balance, commands and payments once, no 503 from a hot row',
    async (t) => {
      const { cluster, instances, front, clusterMs, started } = await deploy(t);
      // Two more instances at once on another empty database, each straight to a node of its own: their
      // migration lock rows meet across nodes (in certification when inserted at the same moment); the
      // instance that lost waits and finds nothing to do.
      const racing = [
        new ServerProcess(await freePort(), await cluster.database(1, 'racing')),
        new ServerProcess(await freePort(), await cluster.database(2, 'racing')),
      ];
      t.teardown(async () => {
        for (const s of racing) await s.stop('SIGKILL');
      });
      await Promise.all(racing.map((s) => s.start()));
      t.same(await migratedTwice(`mysql://app:app@${cluster.address(0)}/racing`), [], 'through two nodes at once: every migration applied once');
      for (const s of racing) await s.stop();
      // The checks read on node 2, which survives; node 1, the writer, is the one killed.
      const checkUrl = `mysql://app:app@${cluster.address(1)}/cluster`;
      const world = await seed(instances[0]!.url, 6, 400);
      const token = await seedDelivery(instances[0]!.url, world.productId);
      let killedAt = Infinity;
      const outcomes: Outcome[] = [];
      const paid: PaymentOutcome[] = [];
      const bought = () => outcomes.filter((o) => o.op === 'buy' && o.status === 200).length;
      const credited = () => paid.filter((p) => p.answers.includes('completed')).length;
      // Each phase: its buys and paid payments, on top of what came before.
      const buyAndPay = () => {
        const [buys, payments] = [bought(), credited()];
        return phase(seconds * 300, () => bought() >= buys + 4 && credited() >= payments + 2);
      };
      const timeline = (async () => {
        await buyAndPay();
        killedAt = Date.now();
        await cluster.kill(0);
        await buyAndPay();
        await instances[1]!.stop('SIGKILL');
        await buyAndPay();
      })();
      const [, delivered] = await Promise.all([
        storm(() => [front], world, 8, timeline, 53, outcomes),
        pollers(
          () => front,
          token,
          timeline,
          () => queueDrained(checkUrl),
        ),
        payers(() => front, world, timeline, paid),
      ]);
      await caughtUp(checkUrl);
      // Cut off by a kill: no answer (an instance gone), or 503 from the instance whose node went.
      const cut = (o: Outcome) => o.status === 0 || o.status === 503;
      const ok = outcomes.filter((o) => o.status >= 200 && o.status < 300);
      // Relative to what was answered: a loaded machine sends fewer requests in the same timeline.
      const answered = outcomes.filter((o) => !cut(o)).length;
      t.ok(ok.length >= 20 && ok.length >= answered * 0.75, `the storm did work (${ok.length} of ${answered} answered requests were 2xx)`);
      t.same(
        outcomes.filter((o) => !cut(o) && failed(o)).map((o) => `${o.op} ${o.status} ${o.error}`),
        [],
        'every answer was a success, a listed refusal, or a request the kills cut off',
      );
      t.ok(
        outcomes.filter((o) => o.status === 503).every((o) => o.error === 'SERVICE_UNAVAILABLE' && o.retryAfter === '2'),
        '503s carry SERVICE_UNAVAILABLE and Retry-After',
      );
      t.same(
        outcomes
          .filter((o) => o.status === 503 && /busy/.test(o.message ?? '') && (o.at < killedAt || o.at > killedAt + FAILOVER_MS))
          .map((o) => `${o.op} at ${o.at - killedAt} ms`),
        [],
        'one writer node: no hot row answers 503 outside the failover',
      );
      t.ok(outcomes.filter((o) => o.op === 'buy' && o.status === 200).length > 10, 'purchases were made');
      t.equal((await fetch(`${instances[0]!.url}/health`)).status, 200, 'the instance serves on through another node');
      const { problems: books, counts } = await checkInvariants(checkUrl, world, outcomes);
      t.same(books, [], `every 2xx durable, balances equal ledgers, stock equals start minus sold (${JSON.stringify(counts)})`);
      const { problems, counts: deliveries } = await checkDeliveries(checkUrl, delivered);
      t.same(problems, [], `each command handed out once (${JSON.stringify(deliveries)})`);
      const { problems: payments, counts: paymentCounts } = await checkPayments(checkUrl, paid);
      t.ok(paymentCounts.completed! > 5, 'payments were made');
      t.same(payments, [], `no payment credited twice (${JSON.stringify(paymentCounts)})`);
      const status = await cluster.status(1);
      t.equal(Number(status.wsrep_cluster_size), 2, 'the two nodes left form the cluster');
      t.comment(
        `cluster up in ${clusterMs} ms, whole test ${Date.now() - started} ms; ${summary(outcomes)}; node 2: ${status.wsrep_local_cert_failures} ` +
          `certification failures, ${status.wsrep_local_bf_aborts} local transactions aborted by replicated ones`,
      );
    },
  );

  t.test('the writer node cut off from the others: it leaves rotation within seconds and no request fails after', async (t) => {
    const { cluster, instances, front, started } = await deploy(t);
    const checkUrl = `mysql://app:app@${cluster.address(1)}/cluster`;
    const world = await seed(instances[0]!.url, 6, 400);
    let isolatedAt = Infinity;
    const outcomes: Outcome[] = [];
    const timeline = (async () => {
      await sleep(seconds * 300);
      isolatedAt = Date.now();
      // The node keeps running and answering, alone: a non-primary component that refuses writes.
      const conn = await createConnection({ socketPath: cluster.socket(0), user: 'root' });
      await conn.query("set global wsrep_provider_options = 'gmcast.isolate=1'");
      await conn.end();
      await phase(FAILOVER_MS + seconds * 600, () => outcomes.filter((o) => o.at > isolatedAt + FAILOVER_MS && o.status === 200).length > 40);
    })();
    await storm(() => [front], world, 8, timeline, 71, outcomes);
    await caughtUp(checkUrl);
    t.equal((await cluster.status(0)).wsrep_cluster_status, 'non-Primary', 'the cut-off node is outside the primary component');
    const after = outcomes.filter((o) => o.at > isolatedAt + FAILOVER_MS);
    t.ok(after.filter((o) => o.status === 200).length > 20, `the majority served after the cut (${after.length} requests)`);
    t.same(
      after.filter(failed).map((o) => `${o.op} ${o.status} ${o.error} at ${o.at - isolatedAt} ms`),
      [],
      'no request failed once the node was out',
    );
    const lastFailure = Math.max(0, ...outcomes.filter(failed).map((o) => o.at + o.ms - isolatedAt));
    t.same(
      outcomes.filter((o) => o.status === 500).map((o) => `${o.op} ${o.message}`),
      [],
      'no 500, even for a commit the cut interrupted',
    );
    for (const s of instances) t.equal((await fetch(`${s.url}/health`)).status, 200, 'both instances healthy on the majority');
    const { problems: books, counts } = await checkInvariants(checkUrl, world, outcomes);
    t.same(books, [], `every 2xx durable, balances equal ledgers (${JSON.stringify(counts)})`);
    t.comment(`whole test ${Date.now() - started} ms; ${summary(outcomes)}; the last failure ended ${lastFailure} ms after the cut`);
  });
}
