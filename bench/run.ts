import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { loadConfig, rootDir } from '../core/config.ts';
import { freePort } from '../test/mariadb-server.ts';
import {
  against,
  compare,
  connections,
  databases,
  type Measure,
  measure,
  memory,
  onDatabases,
  pinned,
  processes,
  rounds,
  slice,
  serverConfig,
  startBaseline,
  startScript,
  startServer,
  stop,
  type Served,
} from './harness.ts';
import { runDataSize } from './datasize.ts';
import { runExport } from './export.ts';
import { runRush } from './rush.ts';
import { runStatements } from './statements.ts';
import { Api, type BenchRequest, withKey } from './scenario.ts';
import { loadNotes, loadScenarios } from './scenarios.ts';

/** The processes serving each side (bench/harness.ts, Side): no more than there are slices for them. */
const perSide = Math.max(1, Math.min(processes, rounds));

/** A process serving a side, with its handle to stop it by. */
type Started = Served & { proc: ChildProcess };

/** `count` processes, each started by `start` on a free port of its own: a side's processes (bench/harness.ts, Side). */
async function startSide(count: number, start: (port: string) => Promise<{ proc: ChildProcess }>): Promise<Started[]> {
  const side: Started[] = [];
  for (let i = 0; i < count; i++) {
    const port = String(await freePort());
    const { proc } = await start(port);
    side.push({ url: `http://127.0.0.1:${port}`, pid: proc.pid!, proc });
  }
  return side;
}

/** A side's processes' own rates, for the log: "2410 / 2120". */
const rates = (m: Measure) => m.processRps.map((r) => r.toFixed(0)).join(' / ');

/** The answer to a scenario's first request, to check the baseline gives the same. */
async function sample(url: string, request: BenchRequest): Promise<unknown> {
  const res = await fetch(url + request.path, { method: request.method, headers: request.headers, body: request.body });
  // A page names its own address (canonical links): the server's and the baseline's differ only by port.
  return (res.headers.get('content-type') ?? '').includes('json') ? res.json() : (await res.text()).replaceAll(url, '<origin>');
}

/** The first place two answers differ, to say why "same answer" is NO. */
function firstDifference(a: unknown, b: unknown, path = '$'): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  // Pages: where the two texts part.
  const at = typeof a === 'string' && typeof b === 'string' ? Math.max(0, [...a].findIndex((c, i) => c !== b[i]) - 20) : 0;
  const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v.slice(at, at + 80)) : JSON.stringify(v)?.slice(0, 80));
  return `${path}: server ${show(a)}, baseline ${show(b)}`;
}

interface DbReport {
  name: string;
  version: string;
  rows: string[];
  facts: string[];
}

async function benchDatabase(kind: string, databaseUrl: string, version: string): Promise<DbReport> {
  const key = randomBytes(24).toString('hex');
  const port = String(await freePort());
  const env = { DATABASE_URL: databaseUrl, PORT: port, HOST: '127.0.0.1', API_KEY: key, CONFIG: serverConfig() };
  // The second memory reading waits past the reclaim of the config the server starts with (docs/performance.md),
  // so it shows the floor the server returns to.
  const restSeconds = loadConfig(env).server.idleReclaimSeconds + 15;
  const base = `http://127.0.0.1:${port}`;
  const scenarios = await loadScenarios();

  // First start: creates the schema. Seeding goes through the server's own API.
  let server = await startServer(env);
  const api = new Api(base, key);
  const requests = new Map<string, BenchRequest[]>();
  for (const s of scenarios) {
    requests.set(s.name, withKey(await s.seed(api), key));
  }
  // Startup on an existing database, the usual case: the median of three.
  const starts: number[] = [];
  for (let i = 0; i < 3; i++) {
    await stop(server.proc);
    server = await startServer(env);
    starts.push(server.ms);
  }
  starts.sort((a, b) => a - b);

  // The baseline runs beside the server, on a port of its own, so each scenario is measured on
  // both taking turns, slice after slice: a slow spell of the machine then weighs on both sides
  // alike instead of on one. Each side is served by `perSide` processes, which take its slices in
  // turn; the server's first is the one just started.
  const serverSide: Started[] = [
    { url: base, pid: server.proc.pid!, proc: server.proc },
    ...(await startSide(perSide - 1, (port) => startServer({ ...env, PORT: port }))),
  ];
  const baselineSide = await startSide(perSide, async (port) => ({ proc: await startBaseline({ ...env, PORT: port }) }));
  const otherSide = against ? await startSide(perSide, (port) => startServer({ ...env, PORT: port }, against)) : [];
  const baseUrl = baselineSide[0]!.url;
  const rows: string[] = [];
  let serverMemory: ReturnType<typeof memory>;
  let serverAtRest: number;
  let baselineMemory: ReturnType<typeof memory>;
  try {
    // Read before anything writes, so both answer from the same rows.
    const differences = new Map<string, string | undefined>();
    for (const s of scenarios.filter((s) => s.readOnly)) {
      const request = requests.get(s.name)![0]!;
      const difference = firstDifference(await sample(base, request), await sample(baseUrl, request));
      if (difference) console.log(`${kind} ${s.name}: the answers differ at ${difference}`);
      differences.set(s.name, difference);
    }
    for (const s of scenarios) {
      const [o, b, a] = await compare([serverSide, baselineSide, ...(against ? [otherSide] : [])], requests.get(s.name)!, rounds, slice);
      const same = !s.readOnly ? 'n/a (writes)' : differences.get(s.name) ? 'NO' : 'yes';
      const row =
        `| ${s.name} | ${o.rps.toFixed(0)} | ${o.p50} | ${o.p99} | ${b.rps.toFixed(0)} | ${b.p50} | ${b.p99} | ` +
        `**${(o.rps / b.rps).toFixed(2)}** | ${same} | ${o.non2xx}/${b.non2xx} |`;
      console.log(row);
      console.log(
        `  after ${s.name}: RSS server ${memory(server.proc.pid!).now} MiB, baseline ${memory(baselineSide[0]!.pid).now} MiB;` +
          ` CPU per request server ${o.cpuUs.toFixed(0)} µs, baseline ${b.cpuUs.toFixed(0)} µs` +
          (perSide > 1 ? `; req/s by process: server ${rates(o)}, baseline ${rates(b)}` : '') +
          (o.databaseCpuUs === undefined ? '' : `; MariaDB's for them ${o.databaseCpuUs.toFixed(0)} µs, ${b.databaseCpuUs!.toFixed(0)} µs`),
      );
      if (a) {
        console.log(
          `  against ${against}: ${a.rps.toFixed(0)} req/s (ratio ${(a.rps / b.rps).toFixed(2)}), CPU per request ${a.cpuUs.toFixed(0)} µs;` +
            ` this server's ÷ that one's: req/s ${(o.rps / a.rps).toFixed(3)}, CPU ${(o.cpuUs / a.cpuUs).toFixed(3)}`,
        );
      }
      rows.push(row);
    }
    serverMemory = memory(server.proc.pid!);
    baselineMemory = memory(baselineSide[0]!.pid);
    await new Promise((r) => setTimeout(r, restSeconds * 1000));
    serverAtRest = memory(server.proc.pid!).now;
  } finally {
    for (const { proc } of [...otherSide, ...baselineSide, ...serverSide]) await stop(proc);
  }
  // Notes last, on a fresh start: their writes come after every comparison.
  const notes: string[] = [];
  server = await startServer(env);
  const noteBaseline = await startBaseline({ ...env, PORT: new URL(baseUrl).port });
  try {
    for (const note of await loadNotes()) {
      notes.push(
        await note.measure(
          api,
          (list) => measure(base, withKey(list, key), server.proc.pid!),
          (list) => measure(baseUrl, withKey(list, key), noteBaseline.pid!),
        ),
      );
      console.log(`${kind} ${notes.at(-1)}`);
    }
  } finally {
    await stop(noteBaseline);
    await stop(server.proc);
  }
  return {
    name: kind,
    version,
    rows,
    facts: [
      ...notes,
      `Server process RSS${perSide > 1 ? " (the first of its processes, as the baseline's)" : ''} after the whole run: **${serverMemory.now} MiB** (its peak: ${serverMemory.peak} MiB); at rest ${restSeconds} s later: ` +
        `**${serverAtRest} MiB**; the baseline's: ${baselineMemory.now} MiB (peak ${baselineMemory.peak} MiB).`,
      `\`npm start\`'s command (\`${startScript}\`) to a healthy /health on the seeded database: **${starts[1]!.toFixed(0)} ms** (median of 3; ` +
        `${starts.map((s) => s.toFixed(0)).join(', ')}).`,
    ],
  };
}

if (process.env.BENCH_ONLY === 'datasize') {
  await runDataSize();
  process.exit(0);
}
if (process.env.BENCH_ONLY === 'export') {
  await runExport();
  process.exit(0);
}
if (process.env.BENCH_ONLY === 'statements') {
  await runStatements();
  process.exit(0);
}
if (process.env.BENCH_ONLY === 'rush') {
  await runRush();
  process.exit(0);
}

const reports: DbReport[] = [];
for (const kind of databases) {
  await onDatabases(kind, 1, async ([url], name, version) => {
    reports.push(await benchDatabase(name, url!, version));
  });
}

const cpu = cpus();
const measuredAt = new Date().toISOString().slice(0, 16).replace('T', ' ');
const report = `# Benchmark results

Measured ${measuredAt} UTC on ${cpu.length} × ${cpu[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}.
The server as shipped (default config, every feature on) ${
  pinned
    ? 'pinned to core 0, the load generator (autocannon) in its own process on core 1'
    : 'and ' + 'the load generator in separate processes (one core: not pinned)'
};
and beside it the bare Fastify + driver baseline (bench/baseline.ts), pinned the same way, on the same database, doing the same database work by hand.
Each scenario runs on the server and the baseline taking turns, ${rounds} slices of ${slice} s a side (the order reversed each round) after 1 s of warm-up each;
${perSide > 1 ? `each side is served by ${perSide} processes of its own, which take its slices in turn; ` : ''}a side's figures are over all its slices. ${connections} connections. Latencies in ms. "ratio" = server req/s ÷ baseline req/s.
"same answer": the baseline's JSON for the first request equals the server's. "non-2xx" = server / baseline.
${reports
  .map(
    (r) => `
## ${r.name} (${r.version})

| scenario | req/s | p50 | p99 | baseline req/s | baseline p50 | baseline p99 | ratio | same answer | non-2xx |
|---|---|---|---|---|---|---|---|---|---|
${r.rows.join('\n')}

${r.facts.map((f) => `- ${f}`).join('\n')}
`,
  )
  .join('')}`;
// A narrowed run (one database, some scenarios, or against another checkout) prints its figures but keeps the full report.
if (databases.length === 2 && !process.env.BENCH_ONLY && !against) writeFileSync(join(rootDir, 'bench/results.md'), report);
console.log(`\n${report}`);
