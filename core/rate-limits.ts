/**
 * Request rate limits counted in the database: @fastify/rate-limit's store for every route's
 * `config.rateLimit`, so the instances on one database share one count per key and window and a
 * client sent to two of them gets the limit once, not twice. AttemptLimit counts a service's own
 * attempts (wrong codes) in the same table, given back when an attempt turns out right.
 */
import { hash } from 'node:crypto';
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { everyRound } from './background.ts';
import { clockNow } from './clock.ts';
import type { Database } from './db.ts';
import { fields, raw, sql } from './sql.ts';
import { defineEntity, p } from './table.ts';

export const CoreRateLimit = defineEntity({
  name: 'CoreRateLimit',
  tableName: 'core_rate_limits',
  properties: {
    /**
     * A hash of the route and the limiter's key: one width whatever a client sends as a name, and
     * no player's name or address kept at rest.
     */
    bucket: p.string().length(64).primary(),
    /** Requests counted in the current window. */
    hits: p.integer(),
    /** When the window ends, in ms since the epoch: the next request after it starts a new one. */
    expiresAt: p.bigint('number').index(),
  },
});

/** What @fastify/rate-limit reads of a count: requests so far, and ms until the window ends. */
interface RateWindow {
  current: number;
  ttl: number;
}

/** The options of a route's limit that change how a window is counted. */
interface Counting {
  continueExceeding?: boolean;
  exponentialBackoff?: boolean;
}

/**
 * The route's fields @fastify/rate-limit hands `child`: its own options merged over the plugin's,
 * and the route itself (empty for a limiter made with `app.createRateLimit`).
 */
interface RouteLimit extends Counting {
  routeInfo: { method?: string | string[]; url?: string };
}

type Callback = (err: Error | null, res?: RateWindow) => void;

const L = CoreRateLimit.c;
/** A bucket's count and when its window ends, as the increment left them. */
const COUNTED = fields({ hits: L.hits, expires_at: L.expiresAt });
/** MySQL's count hands back its row in the insert id: the count times this, plus the ms left (below it). */
const MS_RANGE = 2 ** 32;
/** The most a window counts on MySQL, so the two stay an exact JS number; any limit is refused long before. */
const MAX_HITS = 2 ** 21 - 1;

/**
 * One request counted: a window past its end starts again at 1. Every condition reads the row as
 * it was (SQLite assigns from the old row; MySQL left to right, and `hits` comes before the only
 * column the conditions read). On MySQL, which has no RETURNING, the count and the ms left go back
 * as the statement's insert id (LAST_INSERT_ID(n) sets it; 0 when the insert made the row), so one
 * statement counts and reads, with no transaction around it.
 */
const count = (bucket: string, at: number, end: number) => {
  const expired = sql`${L.expiresAt} <= ${at}`;
  const ends = sql`case when ${expired} then ${end} else ${L.expiresAt} end`;
  return {
    insert: sql`insert into ${CoreRateLimit} (${L.bucket}, ${L.hits}, ${L.expiresAt}) values (${bucket}, 1, ${end})`,
    reset: sql`${L.hits} = case when ${expired} then 1 else ${L.hits} + 1 end, ${L.expiresAt} = ${ends}`,
    reported: sql`${L.hits} = last_insert_id(case when ${expired} then 1 else least(${L.hits} + 1, ${raw(String(MAX_HITS))}) end * ${raw(String(MS_RANGE))}
        + least(${ends} - ${at}, ${raw(String(MS_RANGE - 1))})) div ${raw(String(MS_RANGE))},
      ${L.expiresAt} = ${ends}`,
  };
};

class RateCounter {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Counts one request against `bucket` and answers the count with the time left of its window. */
  async hit(bucket: string, windowMs: number, max: number, counting: Counting): Promise<RateWindow> {
    return (await this.hitAll([{ bucket, windowMs, max }], counting))[0]!;
  }

  /**
   * Counts one request against each bucket: on SQLite in one transaction, so counts arriving
   * together share one commit; on MySQL each count is one statement of its own.
   */
  async hitAll(buckets: { bucket: string; windowMs: number; max: number }[], counting: Counting): Promise<RateWindow[]> {
    const at = clockNow();
    const counted = async () => {
      const windows: RateWindow[] = [];
      for (const { bucket, windowMs, max } of buckets) {
        const { hits: current, expiresAt: ends } = await this.#count(bucket, at, at + windowMs);
        let expiresAt = ends;
        if (current > max && (counting.continueExceeding || counting.exponentialBackoff)) {
          // Requests past the limit push the window's end on: by one window, or doubling each time.
          const ms = counting.exponentialBackoff ? windowMs * 2 ** (current - max - 1) : windowMs;
          expiresAt = at + Math.min(ms, Number.MAX_SAFE_INTEGER - at);
          await this.#db.run(sql`update ${CoreRateLimit} set ${L.expiresAt} = ${expiresAt} where ${L.bucket} = ${bucket}`);
        }
        windows.push({ current, ttl: expiresAt - at });
      }
      return windows;
    };
    return this.#db.dialect === 'sqlite' ? this.#db.transaction(counted) : counted();
  }

  async #count(bucket: string, at: number, end: number): Promise<{ hits: number; expiresAt: number }> {
    const { insert, reset, reported } = count(bucket, at, end);
    if (this.#db.dialect === 'sqlite') {
      const [row] = await this.#db.query(sql`${insert} on conflict (${L.bucket}) do update set ${reset} returning ${COUNTED}`);
      return { hits: Number(row!.hits), expiresAt: Number(row!.expires_at) };
    }
    const { insertId } = await this.#db.run(sql`${insert} on duplicate key update ${reported}`);
    if (insertId === 0) return { hits: 1, expiresAt: end };
    return { hits: Math.floor(insertId / MS_RANGE), expiresAt: at + (insertId % MS_RANGE) };
  }

  /** Takes back one request counted in each bucket's current window (one that turned out not to count). */
  async giveBack(buckets: string[]): Promise<void> {
    await this.#db.run(sql`update ${CoreRateLimit} set ${L.hits} = ${L.hits} - 1
      where ${L.bucket} in ${buckets} and ${L.hits} > 0 and ${L.expiresAt} > ${clockNow()}`);
  }

  /** Deletes the windows that have ended: a later request starts a new one either way. */
  async sweep(): Promise<void> {
    await this.#db.run(sql`delete from ${CoreRateLimit} where ${L.expiresAt} <= ${clockNow()}`);
  }
}

/**
 * The store @fastify/rate-limit takes as `store` (a class it makes with `new`): one child per
 * limited route, whose keys are counted apart from every other route's.
 */
function databaseStore(counter: RateCounter) {
  return class DatabaseRateStore {
    readonly #scope: string;
    readonly #counting: Counting;

    constructor(options: Counting, scope = '') {
      this.#scope = scope;
      this.#counting = { continueExceeding: options.continueExceeding, exponentialBackoff: options.exponentialBackoff };
    }

    #bucket(key: string): string {
      return hash('sha256', `${this.#scope}\n${key}`, 'hex');
    }

    incr(key: string, cb: Callback, timeWindow: number, max: number): void {
      counter.hit(this.#bucket(key), timeWindow, max, this.#counting).then((res) => cb(null, res), cb);
    }

    child(route: RouteLimit): DatabaseRateStore {
      const { method = '', url = '' } = route.routeInfo;
      return new DatabaseRateStore(route, `${[method].flat().join(',')} ${url}`);
    }
  };
}

/** Counts every route's limit in the database, and sweeps ended windows every `sweepSeconds`. */
export function rateLimitStore(app: FastifyInstance, db: Database, sweepSeconds: number): FastifyRateLimitStoreCtor {
  const counter = new RateCounter(db);
  everyRound(app, app.log, 'rate limit sweep', sweepSeconds * 1000, () => counter.sweep());
  // The typings say `child` gets the route's options; it gets them merged into the limit's, with the route as `routeInfo`.
  return databaseStore(counter) as unknown as FastifyRateLimitStoreCtor;
}

/** A limit's numbers: attempts per window; 0 = no limit. */
export interface AttemptRate {
  max: number;
  windowSeconds: number;
}

/**
 * Attempts a service counts itself, in the same table and windows as the routes' limits (so every
 * instance shares them): each is claimed before it is judged, so guesses sent together count too,
 * and given back when it turned out right. Claim outside any transaction: a rollback would undo the count.
 */
export class AttemptLimit {
  readonly #counter: RateCounter;
  readonly #scope: string;

  constructor(db: Database, scope: string) {
    this.#counter = new RateCounter(db);
    this.#scope = scope;
  }

  #bucket(key: string): string {
    return hash('sha256', `${this.#scope}\n${key}`, 'hex');
  }

  /**
   * Counts one attempt against each key under its rate; the seconds to wait when any of them is
   * over its limit (that attempt stays counted), else undefined.
   */
  async claim(keys: { key: string; rate: AttemptRate }[]): Promise<number | undefined> {
    const limited = keys.filter((k) => k.rate.max > 0);
    if (limited.length === 0) return undefined;
    const windows = await this.#counter.hitAll(
      limited.map(({ key, rate }) => ({ bucket: this.#bucket(key), windowMs: rate.windowSeconds * 1000, max: rate.max })),
      {},
    );
    let wait: number | undefined;
    for (const [i, { current, ttl }] of windows.entries()) {
      if (current > limited[i]!.rate.max) wait = Math.max(wait ?? 0, Math.max(1, Math.ceil(ttl / 1000)));
    }
    return wait;
  }

  /** The attempt claimed on each key was right: it no longer counts. */
  async giveBack(keys: { key: string; rate: AttemptRate }[]): Promise<void> {
    const limited = keys.filter((k) => k.rate.max > 0);
    if (limited.length) await this.#counter.giveBack(limited.map(({ key }) => this.#bucket(key)));
  }
}
