/**
 * A benchmark scenario: one hot endpoint of this server, and a route of the bare baseline server
 * (bench/baseline.ts) doing the same database work, measured one after the other by
 * `npm run bench` (bench/run.ts). Each feature keeps its scenarios in bench/<feature>.ts and
 * exports them as `scenarios`.
 *
 * The server is seeded through its own HTTP API, as an admin would; the baseline then runs on
 * the very same database, so both answer from the same rows.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BaseDb } from './base-db.ts';

export interface BenchRequest {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/api/users?username=u1`. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** The requests with the API key the runner sends them with (a request's own headers win). */
export const withKey = (list: BenchRequest[], key: string): BenchRequest[] => list.map((r) => ({ ...r, headers: { 'x-api-key': key, ...r.headers } }));

export interface Scenario {
  /** Row name in the report, e.g. `credits/send`. */
  name: string;
  /**
   * Seeds the database through the running server and returns the requests the load generator
   * cycles through (the runner adds the API key).
   */
  seed(api: Api): Promise<BenchRequest[]>;
  /** Reads only: the runner checks that server and baseline give the same answer. */
  readOnly?: boolean;
  /** The baseline route, served by bench/baseline.ts on the same database. */
  baseline: BaselineRoute;
}

/**
 * A figure that is not a throughput against a baseline (a latency across two clients, say):
 * measured on the server alone, after the scenarios, on the same database. Exported as `notes`
 * from bench/<feature>.ts; `measure` seeds what it needs and returns the sentence for the report.
 */
export interface BenchNote {
  name: string;
  /**
   * `load` measures requests on the server as the scenarios are measured (the load generator on its
   * own core); `bare` the same on the bare baseline, beside it on the same database.
   */
  measure(api: Api, load: Load, bare: Load): Promise<string>;
}

/** One measurement of `requests` on the server: a warm-up second, then the run; CPU time per request in µs. */
export type Load = (requests: BenchRequest[]) => Promise<{ rps: number; p50: number; p99: number; non2xx: number; cpuUs: number }>;

export interface BaselineRoute {
  method: BenchRequest['method'];
  url: string;
  /** Answered on the staff session's cookie, which the route checks itself, instead of the API key (the console's dashboard). */
  session?: boolean;
  /** A gateway's signed webhook: the body is the exact bytes sent (a Buffer), and no API key is asked, as the server's webhook route. */
  raw?: boolean;
  handler(db: BaseDb, request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

/** The running server's HTTP API, with an admin key. */
export class Api {
  readonly base: string;
  readonly #key: string;

  constructor(base: string, key: string) {
    this.base = base;
    this.#key = key;
  }

  /** Sends a JSON body; anything but a 2xx stops the run. Returns the parsed answer. */
  async send(method: 'POST' | 'PUT' | 'PATCH', path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const res = await fetch(this.base + path, {
      method,
      headers: { 'x-api-key': this.#key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`seeding ${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  }

  /** Makes a thing and returns its id (`id`, or `data.id` where the answer is `{ status, data }`). */
  async create(path: string, body: Record<string, unknown>): Promise<string> {
    const json = (await this.send('POST', path, body)) as { id?: string; data?: { id: string } };
    return json.data?.id ?? json.id!;
  }

  /** Registers a player (each on an address of its own, so the per-address limit never refuses the seed) with `cents` credits. */
  async player(i: number, username: string, cents: number, password = PASSWORD): Promise<string> {
    await this.send('POST', '/api/auth/register', {
      username,
      password,
      email: `${username.toLowerCase()}@example.com`,
      ip: `10.${(i >> 8) & 255}.${i & 255}.1`,
      useragent: USERAGENT,
    });
    if (cents) await this.send('POST', '/api/credits/set', { target_username: username, amount: (cents / 100).toFixed(2) });
    const profile = await fetch(`${this.base}/api/users?username=${encodeURIComponent(username)}`, { headers: { 'x-api-key': this.#key } });
    return ((await profile.json()) as { id: string }).id;
  }

  /** Signs `username` in to the console through its form (CSRF token and all); the session's cookie header. */
  async consoleCookie(username: string): Promise<string> {
    const form = await fetch(`${this.base}/console/login`);
    const token = String(form.headers.get('set-cookie')).split(';')[0]!;
    const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(await form.text())![1]!;
    const signed = await fetch(`${this.base}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: token, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, username, password: PASSWORD }).toString(),
    });
    return (
      signed.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ') || token
    );
  }

  /** A request with the key; the answer parsed, anything but a 2xx stops the run. */
  async request(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<unknown> {
    const res = await fetch(this.base + path, {
      method,
      headers: { 'x-api-key': this.#key, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  }

  /** An open response body to read as it arrives (Server-Sent Events). */
  async stream(path: string): Promise<ReadableStreamDefaultReader<Uint8Array>> {
    const res = await fetch(this.base + path, { headers: { 'x-api-key': this.#key } });
    if (!res.ok || !res.body) throw new Error(`GET ${path}: ${res.status}`);
    return res.body.getReader();
  }

  /** Runs `make(i)` for i < count, `batch` at a time: seeding thousands of rows one by one would take minutes. */
  static async batched(count: number, batch: number, make: (i: number) => Promise<unknown>): Promise<void> {
    for (let start = 0; start < count; start += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, count - start) }, (_, k) => make(start + k)));
    }
  }
}

export const PASSWORD = 'correct horse battery';
export const USERAGENT = 'GameServer/1.0';

/** Money as the API shows it: cents to "12.34". */
export const money = (cents: number) => (cents / 100).toFixed(2);
