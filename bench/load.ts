/**
 * The load generator, in a process of its own (bench/run.ts pins it to the core the server does
 * not use): reads {url, requests, connections, seconds} as JSON on stdin, runs autocannon, and
 * prints {rps, p50, p99, non2xx} as JSON.
 */
import { text } from 'node:stream/consumers';
import autocannon from 'autocannon';
import type { BenchRequest } from './scenario.ts';

const job = JSON.parse(await text(process.stdin)) as { url: string; requests: BenchRequest[]; connections: number; seconds: number };
const result = await autocannon({ url: job.url, connections: job.connections, duration: job.seconds, requests: job.requests });
console.log(JSON.stringify({
  rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99,
  non2xx: result.non2xx + result.errors + result.timeouts,
}));
