/**
 * Chat role sync: when a linked user's site role with a `chatRoleID` is granted, extended,
 * revoked or expires, the matching role on the chat platform is added or removed through its REST
 * API (Discord-style `PUT|DELETE /guilds/{guild}/members/{user}/roles/{role}`).
 *
 * Durable and out of the caller's way: the role change writes an outbox row in its own transaction
 * (so a crash or restart loses nothing), and a background worker delivers after commit, retrying
 * with backoff and honouring 429 `retry_after`. A row says only "bring this user's chat role in
 * line"; the worker reads the user's roles when it sends, so the last change always wins and two
 * site roles sharing one chat role cannot undo each other.
 */
import type { FastifyBaseLogger } from 'fastify';
import { RoundLog } from '../../core/background.ts';
import { countParam, type Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { count, fields, sql, typed } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { UsersService } from '../users/contract.ts';
import { ChatIntegrationRoleSync } from './entities.ts';
import type { ChatSettingsStore } from './settings.ts';

export interface RoleSyncOptions {
  /** Longest idle wait between passes (the worker also wakes at once after a role change). */
  pollMs: number;
  /** First retry delay after a network error or 5xx; doubles per attempt up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Attempts before a row is marked failed. */
  maxAttempts: number;
  requestTimeoutMs: number;
}

type Outcome =
  | { kind: 'done' }
  | { kind: 'rate-limited'; waitMs?: number }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string }
  | { kind: 'stopped' };

/** The chat platform's member-role routes. Never logs or returns the token. */
export class ChatRoleClient {
  readonly #base: string;
  readonly #guildId: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  constructor(apiBaseUrl: string, guildId: string, token: string, timeoutMs: number) {
    this.#base = apiBaseUrl.replace(/\/+$/, '');
    this.#guildId = guildId;
    this.#token = token;
    this.#timeoutMs = timeoutMs;
  }

  /** Adds (`hold`) or removes the chat role. */
  async setRole(hold: boolean, chatUserId: string, chatRoleId: string, stop: AbortSignal): Promise<Outcome> {
    const method = hold ? 'PUT' : 'DELETE';
    const url = `${this.#base}/guilds/${encodeURIComponent(this.#guildId)}/members/${encodeURIComponent(chatUserId)}/roles/${encodeURIComponent(chatRoleId)}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bot ${this.#token}`, 'user-agent': 'DiscordBot (community-platform, 1)', 'x-audit-log-reason': 'site role sync' },
        signal: AbortSignal.any([stop, AbortSignal.timeout(this.#timeoutMs)]),
      });
    } catch (err) {
      if (stop.aborted) return { kind: 'stopped' };
      // fetch hides the network reason (refused, reset, timed out) in `cause`.
      const cause = (err as Error & { cause?: Error }).cause?.message;
      return { kind: 'retry', error: `${method}: ${(err as Error).message}${cause ? `: ${cause}` : ''}` };
    }
    const body = await res.text().catch(() => '');
    // A removal the platform cannot find (member left, role deleted) has nothing left to do.
    if (res.ok || (res.status === 404 && !hold)) return { kind: 'done' };
    if (res.status === 429) return { kind: 'rate-limited', waitMs: retryAfterMs(body, res.headers.get('retry-after')) };
    const error = `${method} answered ${res.status}: ${body.slice(0, 160)}`;
    return res.status >= 500 ? { kind: 'retry', error } : { kind: 'failed', error };
  }
}

/** Discord puts seconds (a float) in the body's `retry_after`; plain HTTP in the Retry-After header. */
function retryAfterMs(body: string, header: string | null): number | undefined {
  let seconds: unknown;
  try {
    seconds = (JSON.parse(body) as { retry_after?: unknown }).retry_after;
  } catch {
    seconds = undefined;
  }
  if (typeof seconds !== 'number') seconds = header === null ? NaN : Number(header);
  return Number.isFinite(seconds) && (seconds as number) >= 0 ? Math.ceil((seconds as number) * 1000) : undefined;
}

type OutboxRow = TableRecord<typeof ChatIntegrationRoleSync>;

const BATCH = 50;
const R = ChatIntegrationRoleSync.c;

export class RoleSync {
  readonly #db: Database;
  readonly #users: UsersService;
  readonly #settings: ChatSettingsStore;
  readonly #client: ChatRoleClient;
  readonly #opts: RoleSyncOptions;
  readonly #log: FastifyBaseLogger;
  readonly #rounds: RoundLog;
  /** A claimed row stays invisible to other workers this long, then counts as abandoned (a crash). */
  readonly #leaseMs: number;
  readonly #abort = new AbortController();
  #timer?: NodeJS.Timeout;
  #running?: Promise<void>;
  #again = false;
  #stopping = false;
  /** Set by a 429: nothing is sent before this time. */
  #pausedUntil = 0;

  constructor(db: Database, users: UsersService, settings: ChatSettingsStore, client: ChatRoleClient, opts: RoleSyncOptions, log: FastifyBaseLogger) {
    this.#db = db;
    this.#users = users;
    this.#settings = settings;
    this.#client = client;
    this.#opts = opts;
    this.#log = log;
    this.#rounds = new RoundLog(log, 'chat role sync');
    this.#leaseMs = opts.requestTimeoutMs * 2 + 1000;
  }

  /** Runs inside the transaction that changed the role: the row commits or rolls back with it. */
  async enqueue(userId: number, roleId: number): Promise<void> {
    if (!(await this.#settings.roleSyncing())) return;
    const role = await this.#users.getRole(roleId);
    if (!role?.chatRoleID) return;
    const chatUserId = (await this.#users.findById(userId))?.linkedAccounts.chat;
    if (!chatUserId) return;
    await ChatIntegrationRoleSync.insert(this.#db, {
      userId,
      chatUserId,
      chatRoleId: role.chatRoleID,
      attempts: 0,
      dueAt: Date.now(),
      createdAt: now(),
    });
  }

  /** Starts a pass now (or right after the running one). */
  kick(): void {
    if (this.#stopping) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#run();
  }

  /** Rows still to deliver; failed ones wait for an operator, not for the worker. */
  async backlog(): Promise<number> {
    const [row] = await this.#db.query(sql`select ${fields({ n: count() })} from ${ChatIntegrationRoleSync} where ${R.failedAt} is null`);
    return Number(row!.n);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    this.#abort.abort();
    await this.#running;
  }

  async #run(): Promise<void> {
    let next = this.#opts.pollMs;
    try {
      do {
        this.#again = false;
        next = await this.#pass();
      } while (this.#again && !this.#stopping);
      this.#rounds.succeeded();
    } catch (err) {
      this.#rounds.failed(err);
    } finally {
      this.#running = undefined;
    }
    if (this.#stopping) return;
    this.#timer = setTimeout(() => this.kick(), next);
    this.#timer.unref();
  }

  /** Delivers every due row; returns how long to sleep before the next pass. */
  async #pass(): Promise<number> {
    if (!(await this.#settings.roleSyncing())) return this.#opts.pollMs;
    for (;;) {
      const paused = this.#pausedUntil - Date.now();
      if (paused > 0) return paused;
      const rows = await ChatIntegrationRoleSync.select(
        this.#db,
        sql`where ${R.failedAt} is null and ${R.dueAt} <= ${Date.now()} order by ${R.id} limit ${countParam(BATCH)}`,
      );
      if (rows.length === 0) break;
      for (const row of rows) {
        if (this.#stopping || this.#pausedUntil > Date.now()) break;
        await this.#deliver(row);
      }
      if (this.#stopping) return this.#opts.pollMs;
    }
    const [next] = await this.#db.query(
      sql`select ${fields({ due: typed<number | string | null>(sql`min(${R.dueAt})`) })} from ${ChatIntegrationRoleSync} where ${R.failedAt} is null`,
    );
    if (next?.due == null) return this.#opts.pollMs; // nothing pending: poll for other processes' work
    return Math.min(Math.max(Number(next.due) - Date.now(), 0), this.#opts.pollMs);
  }

  async #deliver(row: OutboxRow): Promise<void> {
    const claimed = await this.#db.run(sql`update ${ChatIntegrationRoleSync} set ${R.dueAt} = ${Date.now() + this.#leaseMs}
      where ${R.id} = ${row.id} and ${R.dueAt} <= ${Date.now()} and ${R.failedAt} is null`);
    if (claimed.affectedRows === 0) return; // another worker has it
    const { userId, chatUserId, chatRoleId } = row;
    const hold = (await this.#users.rolesOf(userId)).some((r) => r.chatRoleID === chatRoleId);
    const outcome = await this.#client.setRole(hold, chatUserId, chatRoleId, this.#abort.signal);
    const what = { userId, chatUserId, chatRoleId, action: hold ? 'add' : 'remove' };
    switch (outcome.kind) {
      case 'done':
        // The pair is in line now, so its earlier refusals are history.
        await this.#db.run(sql`delete from ${ChatIntegrationRoleSync} where ${R.id} = ${row.id}
           or (${R.userId} = ${userId} and ${R.chatUserId} = ${chatUserId} and ${R.chatRoleId} = ${chatRoleId} and ${R.failedAt} is not null)`);
        this.#log.debug(what, 'chat role synced');
        return;
      case 'stopped':
        await this.#reschedule(row, Date.now());
        return;
      case 'rate-limited': {
        const wait = outcome.waitMs ?? this.#opts.retryBaseMs;
        this.#pausedUntil = Date.now() + wait;
        await this.#reschedule(row, this.#pausedUntil);
        this.#log.warn({ ...what, waitMs: wait }, 'chat platform rate limit: waiting');
        return;
      }
      case 'retry': {
        const attempts = row.attempts + 1;
        if (attempts >= this.#opts.maxAttempts) return this.#fail(row, outcome.error, what);
        const delay = Math.min(this.#opts.retryBaseMs * 2 ** (attempts - 1), this.#opts.retryMaxMs);
        await this.#reschedule(row, Date.now() + delay, { attempts, error: outcome.error });
        this.#log.warn({ ...what, attempts, delayMs: delay, error: outcome.error }, 'chat role sync failed: will retry');
        return;
      }
      case 'failed':
        return this.#fail(row, outcome.error, what);
    }
  }

  /** Hands the claimed row back, due at `dueAt`; a failed attempt is counted and its error kept. */
  async #reschedule(row: OutboxRow, dueAt: number, failure?: { attempts: number; error: string }): Promise<void> {
    await ChatIntegrationRoleSync.update(this.#db, row.id, failure ? { dueAt, attempts: failure.attempts, lastError: failure.error.slice(0, 255) } : { dueAt });
  }

  async #fail(row: OutboxRow, error: string, what: object): Promise<void> {
    await ChatIntegrationRoleSync.update(this.#db, row.id, { failedAt: now(), lastError: error.slice(0, 255) });
    this.#log.error({ ...what, error }, 'chat role sync gave up');
  }
}
