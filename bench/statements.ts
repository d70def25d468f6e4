/**
 * `BENCH_ONLY=statements npm run bench`: what each scenario's request asks of MariaDB, on the server
 * and on the baseline: statements, transactions and bytes each way, read from MariaDB's own counters
 * around a few hundred requests sent one at a time. It checks the baseline's "same database work"
 * and finds a request that makes a statement its baseline does without; it measures no speed.
 */
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { freePort } from '../test/mariadb-server.ts';
import { onDatabases, serverConfig, startBaseline, startServer, stop } from './harness.ts';
import { Api, type BenchRequest, withKey } from './scenario.ts';
import { loadScenarios } from './scenarios.ts';

const REQUESTS = 300;
const WARM_UP = 20;
/** MariaDB's counters, each as the table shows it. */
const COUNTERS = {
  Com_stmt_execute: 'statements',
  Com_begin: 'transactions',
  Com_stmt_prepare: 'prepared',
  Bytes_received: 'bytes to MariaDB',
  Bytes_sent: 'bytes from MariaDB',
} as const;
type Counter = keyof typeof COUNTERS;

export async function runStatements(): Promise<void> {
  await onDatabases('mariadb', 1, async ([url]) => {
    const key = randomBytes(24).toString('hex');
    const port = String(await freePort());
    const env = { DATABASE_URL: url!, PORT: port, HOST: '127.0.0.1', API_KEY: key, CONFIG: serverConfig() };
    // Every scenario's requests, whatever BENCH_ONLY says: it named this tool.
    const scenarios = await loadScenarios(true);
    const server = await startServer(env);
    const basePort = String(await freePort());
    let baseline: Awaited<ReturnType<typeof startBaseline>> | undefined;
    const root = new URL(url!);
    root.pathname = '/';
    const admin = await createConnection({ uri: root.toString() });
    try {
      const api = new Api(`http://127.0.0.1:${port}`, key);
      const requests = new Map<string, BenchRequest[]>();
      for (const s of scenarios) requests.set(s.name, withKey(await s.seed(api), key));
      baseline = await startBaseline({ ...env, PORT: basePort });
      const counters = async (): Promise<Record<Counter, number>> => {
        const [rows] = (await admin.query('show global status where variable_name in (?)', [Object.keys(COUNTERS)])) as unknown as [
          { Variable_name: Counter; Value: string }[],
        ];
        return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)])) as Record<Counter, number>;
      };
      const send = async (base: string, list: BenchRequest[], n: number) => {
        for (let i = 0; i < n; i++) {
          const r = list[i % list.length]!;
          await (await fetch(base + r.path, { method: r.method, headers: r.headers, body: r.body })).arrayBuffer();
        }
      };
      console.log(`| scenario | side | ${Object.values(COUNTERS).join(' | ')} |`);
      console.log(`|---|---|${'---|'.repeat(Object.keys(COUNTERS).length)}`);
      for (const s of scenarios) {
        for (const [side, base] of [
          ['server', `http://127.0.0.1:${port}`],
          ['baseline', `http://127.0.0.1:${basePort}`],
        ] as const) {
          const list = requests.get(s.name)!;
          await send(base, list, WARM_UP);
          const before = await counters();
          await send(base, list, REQUESTS);
          const after = await counters();
          // The server's own timers (sweeps, flushes) count too: a fraction a request is theirs, not the request's.
          const per = (Object.keys(COUNTERS) as Counter[]).map((k) => ((after[k] - before[k]) / REQUESTS).toFixed(k.startsWith('Bytes') ? 0 : 2));
          console.log(`| ${s.name} | ${side} | ${per.join(' | ')} |`);
        }
      }
    } finally {
      await admin.end();
      if (baseline) await stop(baseline);
      await stop(server.proc);
    }
  });
}
