/**
 * A benchmark scenario: one hot endpoint of this server, and a bare Fastify + mysql2 route doing
 * the same database work, measured side by side by `npm run bench` (bench/run.ts).
 * Each feature keeps its scenarios in bench/<feature>.ts and exports them as `scenarios`; a
 * growth measurement is two scenarios at two sizes (e.g. `store/listing-10`, `store/listing-1000`).
 * The helpers at the end are what several scenarios seed and run their baselines with.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Pool, PoolConnection } from 'mysql2/promise';
import { creditsRef } from '../plugins/credits/contract.ts';
import { usersRef } from '../plugins/users/contract.ts';

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
   * autocannon cycles through. `key` is an admin API key; the runner sends it as X-Api-Key with
   * every request, so the requests need not.
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

/**
 * Makes a thing through the server's own API, as an admin would; anything but a 2xx stops the run.
 * Returns its id (`id`, or `data.id` where the answer is `{ success, data }`).
 */
export async function seedPost(app: FastifyInstance, key: string, url: string, body: Record<string, unknown>): Promise<string> {
  const res = await app.inject({ method: 'POST', url, headers: { 'x-api-key': key }, payload: body });
  if (res.statusCode >= 300) throw new Error(`seeding ${url}: ${res.statusCode} ${res.body}`);
  const json = res.json() as { id?: string; data?: { id: string } };
  return json.data?.id ?? json.id!;
}

/** A user made through the services, with `cents` in the wallet; returns the user's id. */
export async function userWithCredits(app: FastifyInstance, username: string, cents: number): Promise<number> {
  const user = await app.services.get(usersRef).createAccount({ username, email: `${username}@example.com`, creationIP: '10.0.0.1' });
  await app.services.get(creditsRef).change(user.id, cents, { reason: 'bench' });
  return user.id;
}

/** Runs `work` in a transaction on one pooled connection: committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(pool: Pool, work: (conn: PoolConnection) => Promise<T>): Promise<T> {
  const conn = await pool.getConnection();
  try {
    await conn.beginTransaction();
    const result = await work(conn);
    await conn.commit();
    return result;
  } catch (err) {
    await conn.rollback();
    throw err;
  } finally {
    conn.release();
  }
}
