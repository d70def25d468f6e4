/**
 * What every bench run shares: the server as `npm start` runs it, spawned in a process of its own
 * pinned to core 0, the load generator (bench/load.ts) in another pinned to core 1, and the
 * figures read from /proc. The knobs are environment variables (see bench/run.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { createConnection } from 'mysql2/promise';
import { merge, rootDir } from '../core/config.ts';
import { RECEIVERS } from '../test/receiver.ts';
import { MariaDbServer } from '../test/mariadb-server.ts';
import type { LoadJob } from './load.ts';
import type { BenchRequest } from './scenario.ts';

export const seconds = Number(process.env.BENCH_SECONDS ?? 5);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** A comparison's rounds: each side gets `rounds` slices of `slice` seconds, taking turns (bench/load.ts). */
export const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
export const slice = Number(process.env.BENCH_SLICE ?? 1);
/** A folder: each server and baseline process writes a V8 CPU profile there when it stops (open it in Chrome's DevTools). */
const profileDir = process.env.BENCH_PROFILE;

/** Node's arguments `args`, with the CPU profile's flags first when BENCH_PROFILE asks for them. */
export function profiled(args: string[]): string[] {
  return profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...args] : args;
}
export const databases = process.env.BENCH_DB === 'sqlite' || process.env.BENCH_DB === 'mariadb' ? [process.env.BENCH_DB] : ['sqlite', 'mariadb'];
export const pinned = cpus().length >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;

export interface Measure {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Each of the side's processes' own req/s over its slices. */
  processRps: number[];
  cpuUs: number;
  /** The private MariaDB's CPU time per request in the same load (both sides' statements cost it), when the bench started one. */
  databaseCpuUs?: number;
}

/** The private MariaDB's process, while onDatabases runs one. */
let databasePid: number | undefined;

/** Every process started here, so none outlives a failed run. */
export const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

/** `node <args>` in a process of its own, on `core` when the machine has two. */
export function spawnNode(core: number, args: string[], env: Record<string, string>): ChildProcess {
  const [cmd, ...rest] = pinned ? ['taskset', '-c', String(core), process.execPath, ...args] : [process.execPath, ...args];
  const child = spawn(cmd!, rest, { cwd: rootDir, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** The process's own peak and current resident memory, in MiB (Linux /proc). */
export function memory(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { peak: Math.round(kb('VmHWM') / 1024), now: Math.round(kb('VmRSS') / 1024) };
}

/** CPU time (user + system) the process has used, in µs (Linux /proc, in clock ticks of 10 ms). */
export function cpuTime(pid: number): number {
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

/** Polls `url` until it answers 200; fails if the process exits first. */
export async function healthy(proc: ChildProcess, url: string): Promise<void> {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the process exited (${proc.exitCode}) before ${url} answered`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What `npm start` runs after `node`: the server's entry and any Node flags it is shipped with. */
export const startScript = scriptOf('start', rootDir);
// `exec node …`: the shell's exec (so a signal to npm reaches the server) is not Node's.
export const startArgs = argsOf(startScript);

/** The npm script `name` of the checkout at `dir`, as package.json writes it. */
function scriptOf(name: string, dir: string): string {
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts[name]!;
}

/** What the npm script `name` runs after `node`: its Node flags and entry, so the bench runs the command as shipped. */
export const scriptArgs = (name: string): string[] => argsOf(scriptOf(name, rootDir));

function argsOf(script: string): string[] {
  return script
    .replace(/^exec /, '')
    .split(' ')
    .slice(1);
}

/**
 * BENCH_AGAINST: another checkout (its `npm ci` done, the same schema), whose server is measured
 * beside this one, on the same database and in the same turns: a change against the code before it.
 */
export const against = process.env.BENCH_AGAINST ? resolve(process.env.BENCH_AGAINST) : undefined;

/**
 * The server as `npm start` runs it, and how long it took from spawn to a healthy /health; from the
 * checkout at `dir` (its own start flags, its entry) when given, else this one.
 */
export async function startServer(env: Record<string, string>, dir?: string): Promise<{ proc: ChildProcess; ms: number }> {
  const started = performance.now();
  const args = dir ? argsOf(scriptOf('start', dir)).map((a) => (a.endsWith('.js') ? join(dir, a) : a)) : startArgs;
  // The default log level too: a successful request writes no log line at it (core/observability.ts).
  const proc = spawnNode(SERVER_CORE, profiled(args), env);
  proc.stdout!.resume();
  await healthy(proc, `http://127.0.0.1:${env.PORT}/health`);
  return { proc, ms: performance.now() - started };
}

/** A process serving a side: where the load goes, and whose CPU time it costs. */
export interface Served {
  url: string;
  pid: number;
}

/**
 * One side of a measurement: the processes that serve it, which take its slices in turn. The same
 * code serves faster in one process than in the next, at times by a third (docs/performance.md),
 * so a side's figures over two processes are less the luck of one.
 */
export type Side = Served[];

/**
 * BENCH_PROCESSES (2): how many processes serve each side of the main comparison (bench/run.ts);
 * at 1, one each, as before 2026-11-30.
 */
export const processes = Number(process.env.BENCH_PROCESSES ?? 2);

/**
 * Runs the load generator (bench/load.ts) on `sides`: a warm-up second on each process, then
 * `slices` rounds of `sliceSeconds` on each side in turn, with the CPU time each side's processes
 * (and the private MariaDB, slice by slice) spent per request: what a CPU-bound ratio comes from,
 * and a figure the machine's noise moves less than req/s.
 */
export async function compare<T extends Side[]>(
  sides: [...T],
  requests: BenchRequest[],
  slices: number,
  sliceSeconds: number,
): Promise<{ [K in keyof T]: Measure }> {
  const proc = spawnNode(LOAD_CORE, ['bench/load.ts'], {});
  const job: LoadJob = { targets: sides.map((s) => s.map((p) => p.url)), requests, connections, warm: 1, slices, seconds: sliceSeconds };
  proc.stdin!.end(JSON.stringify(job));
  const database = databasePid;
  const spent = sides.map(() => ({ cpu: 0, database: 0 }));
  // The slice running: its side, and its process with that process's CPU time as it started.
  let running: { side: number; pid: number; cpu: number } | undefined;
  let databaseCpu = database ? cpuTime(database) : 0;
  // At each boundary, what the process spent since the last one goes to the slice that just ended.
  const boundary = (side: number, served: number) => {
    const nowDatabase = database ? cpuTime(database) : 0;
    if (running) {
      spent[running.side]!.cpu += cpuTime(running.pid) - running.cpu;
      spent[running.side]!.database += nowDatabase - databaseCpu;
    }
    const pid = side >= 0 ? sides[side]![served]!.pid : undefined;
    running = pid === undefined ? undefined : { side, pid, cpu: cpuTime(pid) };
    databaseCpu = nowDatabase;
  };
  let results: Omit<Measure, 'cpuUs'>[] | undefined;
  for await (const line of createInterface({ input: proc.stdout! })) {
    const message = JSON.parse(line) as { slice: number; process: number } | { results: Omit<Measure, 'cpuUs'>[] };
    if ('slice' in message) boundary(message.slice, message.process);
    else {
      boundary(-1, 0);
      results = message.results;
    }
  }
  const code = proc.exitCode ?? (await new Promise((r) => proc.once('exit', r)));
  if (code !== 0 || !results) throw new Error(`the load generator failed (${code})`);
  return results.map((result, i) => {
    const per = (us: number) => us / Math.max(1, result.requests);
    return { ...result, cpuUs: per(spent[i]!.cpu), ...(database ? { databaseCpuUs: per(spent[i]!.database) } : {}) };
  }) as { [K in keyof T]: Measure };
}

/** A warm-up second, then `seconds` of load on one process (see compare). */
export async function measure(url: string, requests: BenchRequest[], pid: number): Promise<Measure> {
  return (await compare([[{ url, pid }]], requests, 1, seconds))[0]!;
}

/**
 * `count` empty databases of `kind` (sqlite or mariadb) for `work`, removed after it: SQLite files
 * in a temporary folder; MariaDB databases on BENCH_MYSQL_URL's server, else on a private one.
 */
export async function onDatabases(kind: string, count: number, work: (urls: string[], name: string, version: string) => Promise<void>): Promise<void> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-'));
    try {
      await work(
        Array.from({ length: count }, (_, i) => `sqlite:${join(dir, `bench${i}.db`)}`),
        'SQLite',
        `node:sqlite ${process.versions.sqlite}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  let server: MariaDbServer | undefined;
  let url = process.env.BENCH_MYSQL_URL;
  if (!url) {
    server = await MariaDbServer.create();
    url = `mysql://app:app@127.0.0.1:${server.port}/`;
    databasePid = server.pid;
  }
  const root = new URL(url);
  root.pathname = '/';
  const admin = await createConnection({ uri: root.toString() });
  const names = Array.from({ length: count }, () => `bench_${randomBytes(4).toString('hex')}`);
  try {
    const [[row]] = (await admin.query('select version() as v')) as unknown as [{ v: string }[]];
    for (const name of names) await admin.query(`create database ${name}`);
    await work(
      names.map((name) => {
        root.pathname = `/${name}`;
        return root.toString();
      }),
      'MariaDB',
      String(row?.v),
    );
  } finally {
    for (const name of names) await admin.query(`drop database if exists ${name}`);
    await admin.end();
    await server?.destroy();
    databasePid = undefined;
  }
}

export async function startBaseline(env: Record<string, string>): Promise<ChildProcess> {
  // Every scenario's route, whatever BENCH_ONLY narrows: a note may measure any of them on the baseline.
  const proc = spawnNode(SERVER_CORE, profiled(['bench/baseline.ts']), { ...env, BENCH_ONLY: '' });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.once('data', () => resolve());
    proc.once('exit', (code) => reject(new Error(`the baseline exited (${code})`)));
  });
  return proc;
}

/**
 * The CONFIG the server is started with: the one the bench was given, if any, with the webhooks
 * note's receivers (on 127.0.0.1, which the server calls only when outbound.allow lists it) allowed,
 * and `extra` over both (a Discord relay's `config`: its host in discordHosts).
 */
export function serverConfig(extra: unknown = {}): string {
  const given: unknown = process.env.CONFIG ? JSON.parse(readFileSync(resolve(process.env.CONFIG), 'utf8')) : {};
  const path = join(mkdtempSync(join(tmpdir(), 'bench-')), 'config.json');
  writeFileSync(path, JSON.stringify(merge(merge(given, { outbound: RECEIVERS }), extra)));
  return path;
}
