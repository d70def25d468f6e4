/**
 * The load generator, in a process of its own (bench/run.ts pins it to the core the server does
 * not use): reads {url, requests, connections, seconds} as JSON on stdin, runs autocannon, and
 * prints {rps, requests, p50, p99, non2xx} as JSON.
 */
import { text } from 'node:stream/consumers';
import autocannon from 'autocannon';
import type { BenchRequest } from './scenario.ts';

const job = JSON.parse(await text(process.stdin)) as { url: string; requests: BenchRequest[]; connections: number; seconds: number };
// One sequence shared by all connections (autocannon would send each connection through the whole
// list from its start), begun at a random place so a warm-up and the run that follows it do not
// repeat the same requests: logins would run into the per-player limit.
let next = Math.floor(Math.random() * job.requests.length);
const result = await autocannon({
  url: job.url,
  connections: job.connections,
  duration: job.seconds,
  requests: [{ setupRequest: (request) => ({ ...request, ...job.requests[next++ % job.requests.length] }) }],
});
console.log(
  JSON.stringify({
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts,
  }),
);
