/**
 * The load generator, in a process of its own (bench/run.ts pins it to the core the server does
 * not use). Reads a job as JSON on stdin: each target is a side served by one or more processes
 * (URLs). Each process gets `warm` seconds of load, then `slices` rounds of `seconds` on every side
 * in turn, the order reversed each round (A B, B A, …) so a slow spell of the machine weighs on all
 * alike; a side's processes take its slices in turn, round by round. Prints `{"slice": i, "process": k}`
 * as side i's slice on its process k starts (slice -1: a warm-up), for the caller to read CPU times
 * at the boundaries, then each side's {rps, requests, p50, p99, non2xx} over its slices as
 * `{"results": […]}`, with each process's own rate (`processRps`).
 */
import { text } from 'node:stream/consumers';
import autocannon from 'autocannon';
import type { BenchRequest } from './scenario.ts';

export interface LoadJob {
  /** Each side's processes, by URL. */
  targets: string[][];
  requests: BenchRequest[];
  connections: number;
  warm: number;
  slices: number;
  seconds: number;
}

const job = JSON.parse(await text(process.stdin)) as LoadJob;
// One sequence shared by all connections (autocannon would send each connection through the whole
// list from its start), begun at a random place so a warm-up and the run that follows it do not
// repeat the same requests: logins would run into the per-player limit.
let next = Math.floor(Math.random() * job.requests.length);

const tallies = job.targets.map((urls) => ({ requests: 0, ms: 0, non2xx: 0, latencies: [] as number[], byProcess: urls.map(() => ({ requests: 0, ms: 0 })) }));

async function slice(target: number, proc: number, seconds: number, tally?: (typeof tallies)[number]): Promise<void> {
  console.log(JSON.stringify({ slice: tally ? target : -1, process: proc }));
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: job.targets[target]![proc]!,
        connections: job.connections,
        duration: seconds,
        requests: [{ setupRequest: (request) => ({ ...request, ...job.requests[next++ % job.requests.length] }) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    if (tally) run.on('response', (_client, _status, _bytes, ms) => tally.latencies.push(ms));
  });
  if (!tally) return;
  const ms = performance.now() - started;
  tally.ms += ms;
  tally.requests += result.requests.total;
  tally.byProcess[proc]!.ms += ms;
  tally.byProcess[proc]!.requests += result.requests.total;
  tally.non2xx += result.non2xx + result.errors + result.timeouts;
}

if (job.warm > 0) for (const [t, urls] of job.targets.entries()) for (const k of urls.keys()) await slice(t, k, job.warm);
for (let round = 0; round < job.slices; round++) {
  const order = job.targets.map((_, t) => t);
  if (round % 2) order.reverse();
  for (const t of order) await slice(t, round % job.targets[t]!.length, job.seconds, tallies[t]);
}
const at = (sorted: number[], q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
const rps = ({ requests, ms }: { requests: number; ms: number }) => (requests * 1000) / ms;
console.log(
  JSON.stringify({
    results: tallies.map((t) => {
      const sorted = t.latencies.sort((a, b) => a - b);
      return { rps: rps(t), requests: t.requests, p50: at(sorted, 0.5), p99: at(sorted, 0.99), non2xx: t.non2xx, processRps: t.byProcess.map(rps) };
    }),
  }),
);
