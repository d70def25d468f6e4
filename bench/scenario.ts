/**
 * A benchmark scenario: one hot endpoint of this server, and a bare Fastify + mysql2 route doing
 * the same database work, measured side by side by `npm run bench` (bench/run.ts).
 * Each feature keeps its scenarios in bench/<feature>.ts and exports them as `scenarios`; a
 * growth measurement is two scenarios at two sizes (e.g. `store/listing-10`, `store/listing-1000`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Pool } from 'mysql2/promise';

export interface BenchRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Path and query, e.g. `/api/users/?username=u1`. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Scenario {
  /** Row name in the report, e.g. `credits/send`. */
  name: string;
  /** Features the server runs for this scenario. */
  features: string[];
  /**
   * Seeds the server's database (through its services or app.inject) and returns the requests
   * autocannon cycles through. `key` is an API key to send as X-Api-Key.
   */
  prepare(app: FastifyInstance, key: string): Promise<BenchRequest[]>;
  /**
   * The baseline: the same database work on a bare mysql2 pool, served by a plain Fastify route.
   * It receives the same requests as the server, so its `url` must match their paths.
   */
  baseline(pool: Pool): {
    method: BenchRequest['method'];
    url: string;
    handler(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  };
}

/**
 * A figure that is not a throughput (e.g. how many SQL statements a listing runs at two sizes).
 * Exported as `notes` from bench/<feature>.ts; the runner builds a server with `features` on a
 * fresh database and prints `measure`'s sentence under the table.
 */
export interface BenchNote {
  features: string[];
  measure(app: FastifyInstance): Promise<string>;
}
