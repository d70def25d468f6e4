/**
 * `npm run bench`: each scenario of bench/<feature>.ts against this server and against its bare
 * Fastify + mysql2 baseline, side by side on one MariaDB, in one run. Prints a markdown table and
 * writes it to bench/results.md.
 *   BENCH_MYSQL_URL  a MySQL/MariaDB server to use (else a private MariaDB is started here)
 *   BENCH_SECONDS    seconds per measurement (default 5)
 *   BENCH_CONNECTIONS concurrent connections (default 10)
 *   BENCH_ONLY       a substring: run only the scenarios whose name contains it
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { createPool, createConnection } from 'mysql2/promise';
import { buildApp } from '../core/app.ts';
import { rootDir } from '../core/config.ts';
import { builtinNames } from '../core/features.ts';
import { MariaDbServer } from '../test/mariadb-server.ts';
import type { BenchNote, BenchRequest, Scenario } from './scenario.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const only = process.env.BENCH_ONLY;

interface Measure { rps: number; p50: number; p99: number; errors: number }

async function measure(url: string, requests: BenchRequest[]): Promise<Measure> {
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: requests.map((r) => ({ method: r.method, path: r.path, headers: r.headers, body: r.body })),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

async function loadScenarios(): Promise<{ scenarios: Scenario[]; notes: BenchNote[] }> {
  const files = readdirSync(join(rootDir, 'bench')).filter((f) => f.endsWith('.ts') && !['run.ts', 'scenario.ts'].includes(f)).sort();
  const scenarios: Scenario[] = [];
  const notes: BenchNote[] = [];
  for (const f of files) {
    const mod = await import(pathToFileURL(join(rootDir, 'bench', f)).href) as { scenarios?: Scenario[]; notes?: BenchNote[] };
    scenarios.push(...(mod.scenarios ?? []).filter((s) => !only || s.name.includes(only)));
    // Notes belong to the whole report: a run narrowed to some scenarios leaves them out.
    if (!only) notes.push(...(mod.notes ?? []));
  }
  return { scenarios, notes };
}

/** A fresh database on the benchmark server and an app on it running `features`. */
async function appOn(features: string[]) {
  const dbName = `bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${dbName}`);
  const url = new URL(rootUrl.toString());
  url.pathname = `/${dbName}`;
  const plugins = Object.fromEntries(builtinNames().map((n) => [n, { enabled: features.includes(n) }]));
  const app = await buildApp({
    env: { DATABASE_URL: url.toString() },
    config: { log: { level: 'warn' }, database: { poolSize: 10 }, plugins },
  });
  return { app, url: url.toString(), drop: () => admin.query(`drop database ${dbName}`) };
}

let server: MariaDbServer | undefined;
let serverUrl = process.env.BENCH_MYSQL_URL;
if (!serverUrl) {
  server = await MariaDbServer.create();
  serverUrl = `mysql://app:app@127.0.0.1:${server.port}/`;
}
const rootUrl = new URL(serverUrl);
rootUrl.pathname = '/';
const admin = await createConnection({ uri: rootUrl.toString() });
const [[version]] = await admin.query('select version() as v') as unknown as [{ v: string }[]];

const rows: string[] = [];
const noteLines: string[] = [];
let peakRss = 0;
const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss); }, 100);
try {
  const { scenarios, notes } = await loadScenarios();
  for (const scenario of scenarios) {
    const { app, url, drop } = await appOn(scenario.features);
    const pool = createPool({ uri: url, connectionLimit: 10 });
    const baseline = Fastify({ logger: false });
    try {
      const key = await app.apiKeys.create('bench', ['api', 'admin']);
      const requests = (await scenario.prepare(app, key)).map((r) => ({ ...r, headers: { 'x-api-key': key, ...r.headers } }));
      const appAddress = await app.listen({ host: '127.0.0.1', port: 0 });
      const route = scenario.baseline(pool);
      baseline.route({ method: route.method, url: route.url, handler: route.handler });
      const baseAddress = await baseline.listen({ host: '127.0.0.1', port: 0 });
      const ours = await measure(appAddress, requests);
      const base = await measure(baseAddress, requests);
      const row = `| ${scenario.name} | ${ours.rps.toFixed(0)} | ${ours.p50} | ${ours.p99} | ${base.rps.toFixed(0)} | ${base.p50} | ${base.p99} | ${(ours.rps / base.rps).toFixed(2)} | ${ours.errors}/${base.errors} |`;
      console.log(row);
      rows.push(row);
    } finally {
      await app.close();
      await baseline.close();
      await pool.end();
      await drop();
    }
  }
  for (const note of notes) {
    const { app, drop } = await appOn(note.features);
    try {
      const line = await note.measure(app);
      console.log(line);
      noteLines.push(`- ${line}`);
    } finally {
      await app.close();
      await drop();
    }
  }
} finally {
  clearInterval(sampler);
  await admin.end();
  await server?.destroy();
}

const cpu = cpus();
const report = `# Benchmark results

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpu.length} × ${cpu[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB,
Node ${process.version}, MariaDB ${version?.v}; ${connections} connections, ${seconds} s per measurement, load generator on the same cores.
Latencies in ms. "ratio" = this server's requests/s ÷ the bare Fastify + mysql2 baseline's. "non-2xx" = this server / baseline.

| scenario | req/s | p50 | p99 | baseline req/s | baseline p50 | baseline p99 | ratio | non-2xx |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

${noteLines.join('\n')}

Peak memory (RSS) of the benchmark process, server and load generator together: ${Math.round(peakRss / 2 ** 20)} MiB.
`;
writeFileSync(join(rootDir, 'bench/results.md'), report);
console.log(`\n${report}`);
