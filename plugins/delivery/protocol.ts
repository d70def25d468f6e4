/**
 * The game servers' protocol: the plugin's poll and validate, a claimer's claim and ack, and the
 * sweeps that put lapsed leases back and wake streams. Handing a row out and marking it done is
 * one conditional update in a causal transaction, so a row reaches a game server at most once
 * however many pollers ask at the same time; an ack that settles fewer rows than it names is
 * refused with DELIVERY_NOT_SETTLED.
 */
import { countParam, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { addSeconds, displayTimestamp, now } from '../../core/format.ts';
import type { JsonText } from '../../core/schema-compilers.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, empty, fields, join, raw, sql, sum, type Sql } from '../../core/sql.ts';
import { hashToken } from './admin.ts';
import type { ClaimedRow, HandedOut, PluginQueueRow } from './contract.ts';
import { DeliveryQueue, DeliveryServer, STATUS_LEASE_INDEX } from './entities.ts';
import { type DeliveryDeps, due, type LeaseOptions } from './model.ts';
import type { Wakeups } from './wakeups.ts';

/** The plugin fetches its whole list each poll: a bound keeps one poll cheap after an outage. */
const PLUGIN_QUEUE_LIMIT = 500;
const S = DeliveryServer.c;
const Q = DeliveryQueue.c;
// The poll's select lists, made once: its statements reuse their text (core/sql.ts).
const SERVER_ID = fields({ id: S.id });
const CLAIMED = fields({ id: Q.id, username: Q.username, command: Q.command });
const QUEUE_ID = fields({ id: Q.id });
const QUEUE_SERVER = fields({ server_id: Q.serverId });
const WAITING = fields({ server_id: Q.serverId, n: count(), ids: sum(Q.id) });
/** "Seen" is for staff spotting a server that stopped polling: to the nearest 10 s is plenty. */
const SEEN_RESOLUTION_MS = 10_000;
/**
 * How long the poll trusts a token's server without reading it: a change made here is seen at once,
 * one made through another instance of a cluster within this. The poll only lists rows; validate and
 * claim, which hand commands out, read the server every time.
 */
const POLL_SERVER_MS = 5_000;

/** A poll's row as JSON, with the column values it was made from. */
interface PollRowJson {
  id: number;
  tries: number;
  updated: string;
  json: string;
}

export class DeliveryProtocol {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #wakeups: Wakeups;
  readonly #lease: LeaseOptions;
  /** When each server's last_seen_date was last written, so a polling server costs a write every few seconds, not every poll. */
  readonly #seenWritten = new Map<number, number>();
  /**
   * The poll's servers by the token presented, with when each was read: a held poll hashes nothing
   * (the API keys' known keys are held the same way, core/api-keys.ts). Only tokens found are kept.
   */
  readonly #pollServers = new Map<string, { id: number; at: number }>();
  /**
   * Each server's last poll answer, row by row: a game server lists the same rows poll after poll,
   * and a row's JSON depends only on its id, tries, updated_date and the time zone, so one that has
   * none of them changed is not formatted and serialized again. A server's entry holds the rows of
   * its last poll only, and all go with the held servers after any server's change (forgetServers).
   */
  readonly #pollAnswers = new Map<number, { timezone: string; rows: PollRowJson[] }>();
  /** Counts forgetServers: a read begun before a change is not kept after it. */
  #serverChanges = 0;
  /** The poll's hint, made once: the dialect does not change. */
  readonly #pollHint: Sql;
  /** The sweep wakes the servers whose delayed rows came due since this time. */
  #dueSince = now();
  /** Each streamed server's waiting rows due now (count and sum of ids) when last read by wakeForOthers. */
  readonly #waitingSeen = new Map<number, string>();

  constructor(deps: DeliveryDeps) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#wakeups = deps.wakeups;
    this.#lease = deps.lease;
    this.#pollHint = raw(deps.db.ignoreIndex(STATUS_LEASE_INDEX));
  }

  /** `not_before` of a row acked as failed at `at`, chosen by the tries it had: one bound delay per try. */
  #retryAt(at: string): Sql {
    const { maxTries, retryBaseSeconds, retryFactor, retryMaxSeconds } = this.#lease;
    if (maxTries <= 1) return raw('null');
    const whens = Array.from(
      { length: maxTries - 1 },
      (_, tries) => sql`when ${tries} then ${addSeconds(at, Math.min(retryBaseSeconds * retryFactor ** tries, retryMaxSeconds))}`,
    );
    return sql`case ${Q.tries} ${join(whens, ' ')} else null end`;
  }

  /** The active server a token belongs to, seen now. */
  async serverByToken(token: string): Promise<number> {
    return this.#seen(await this.#server(hashToken(token)));
  }

  /** The active server of a token hash, or undefined. */
  async #server(hash: string): Promise<number | undefined> {
    const [row] = await this.#db.query(sql`select ${SERVER_ID} from ${DeliveryServer} where ${S.tokenHash} = ${hash} and ${S.isActive} = ${true}`);
    return row && Number(row.id);
  }

  /** The server `id` seen now (its last_seen_date written every SEEN_RESOLUTION_MS at most); none: not found. */
  async #seen(id: number | undefined): Promise<number> {
    if (id === undefined) throw new DomainError('DELIVERY_SERVER_NOT_FOUND', 'No active game server has this token.');
    const at = Date.now();
    if (this.#seenDue(id, at)) {
      this.#seenWritten.set(id, at);
      await DeliveryServer.update(this.#db, id, { lastSeenDate: now() });
    }
    return id;
  }

  /** Whether server `id`'s last_seen_date is due to be written at `at` (ms). */
  #seenDue(id: number, at: number): boolean {
    return at - (this.#seenWritten.get(id) ?? 0) >= SEEN_RESOLUTION_MS;
  }

  // ---- the plugin: poll the queue, then validate what it runs

  async pluginQueue(token: string): Promise<JsonText<PluginQueueRow[]>> {
    // The poll is what game servers send most: its server comes from memory (#heldServer), so a
    // poll is one statement, on the covering index (SERVER_QUEUE_INDEX); MariaDB under load traded it
    // for the status index about every other poll, which is taken out of its choice. (Read in the
    // same statement, a join of the two tables cost MariaDB more than two statements: docs/performance.md.)
    // This mode cannot say who is online, so rows that need it are left to claimers that can.
    // Rows as arrays: a poll may list hundreds, and they are cheaper to make and read than objects.
    // A row unchanged since the server's last poll answers with the JSON it had then (#pollAnswers).
    const serverId = this.#heldServer(token) ?? (await this.#seen(await this.#readPollServer(token)));
    const rows = await this.#db.queryArrays(sql`select ${Q.id}, ${Q.tries}, ${Q.updatedDate}
      from ${DeliveryQueue}${this.#pollHint}
      where ${Q.serverId} = ${serverId} and ${due()} and ${Q.requireOnline} = ${false} order by ${Q.id} limit ${countParam(PLUGIN_QUEUE_LIMIT)}`);
    const { timezone } = this.#settings.get();
    const last = this.#pollAnswers.get(serverId);
    const held = last?.timezone === timezone ? last.rows : [];
    const answered = new Array<PollRowJson>(rows.length);
    const parts = new Array<string>(rows.length);
    // Both lists are in id order: one walk pairs each row with its last answer, if it has one.
    for (let i = 0, j = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const id = Number(row[0]);
      const tries = Number(row[1]);
      const updated = String(row[2]);
      while (j < held.length && held[j]!.id < id) j++;
      let kept = held[j];
      if (kept === undefined || kept.id !== id || kept.tries !== tries || kept.updated !== updated) {
        const answer: PluginQueueRow = {
          id: String(id),
          status: tries > 0 ? 'error' : 'sending',
          retry: String(tries),
          updatedAt: displayTimestamp(updated, timezone),
        };
        kept = { id, tries, updated, json: JSON.stringify(answer) };
      }
      answered[i] = kept;
      parts[i] = kept.json;
    }
    this.#pollAnswers.set(serverId, { timezone, rows: answered });
    return `[${parts.join(',')}]`;
  }

  /**
   * The poll's server from memory: read within POLL_SERVER_MS and seen within SEEN_RESOLUTION_MS,
   * so the poll awaits nothing before its statement; else undefined, and the poll reads it.
   */
  #heldServer(token: string): number | undefined {
    const known = this.#pollServers.get(token);
    if (known === undefined) return undefined;
    const at = Date.now();
    if (at - known.at >= POLL_SERVER_MS || this.#seenDue(known.id, at)) return undefined;
    return known.id;
  }

  /** The active server of a token for the poll, read and then held (undefined: none). */
  async #readPollServer(token: string): Promise<number | undefined> {
    this.#pollServers.delete(token);
    const at = Date.now();
    const changes = this.#serverChanges;
    const id = await this.#server(hashToken(token));
    if (id !== undefined && changes === this.#serverChanges) this.#pollServers.set(token, { id, at });
    return id;
  }

  /** After a server's change (made inactive, deleted, a new token): the poll reads its servers again. */
  forgetServers(): void {
    this.#serverChanges++;
    this.#pollServers.clear();
    this.#pollAnswers.clear();
  }

  async validate(token: string, ids: number[]): Promise<HandedOut[]> {
    const serverId = await this.serverByToken(token);
    const wanted = [...new Set(ids)].slice(0, PLUGIN_QUEUE_LIMIT);
    if (wanted.length === 0) return [];
    return this.#db.transaction(
      async () => {
        const rows = await this.#db.query(
          sql`select ${CLAIMED} from ${DeliveryQueue}
         where ${Q.serverId} = ${serverId} and ${due()} and ${Q.requireOnline} = ${false} and ${Q.id} in ${wanted} order by ${Q.id}${raw(this.#db.forUpdate)}`,
        );
        // The plugin runs the whole answer under its first username: one player per call.
        const player = rows[0]?.username.toLowerCase();
        const out: HandedOut[] = [];
        const at = now();
        for (const r of rows.filter((r) => r.username.toLowerCase() === player)) {
          // The conditional update is what makes a row go out once: a concurrent validate or claim
          // that got it first leaves nothing to update here.
          const { affectedRows } = await this.#db.run(
            sql`update ${DeliveryQueue} set ${Q.status} = 'done', ${Q.updatedDate} = ${at} where ${Q.id} = ${r.id} and ${Q.status} = 'waiting'`,
          );
          if (affectedRows === 1) out.push({ command: r.command, username: r.username });
        }
        return out;
      },
      { causal: true },
    );
  }

  // ---- a claimer: claim rows under a lease, then ack them done or failed

  async claim(token: string, limit: number, online: string[]): Promise<ClaimedRow[]> {
    const serverId = await this.serverByToken(token);
    const players = [...new Set(online.map((n) => n.toLowerCase()))].slice(0, 1000);
    return this.#db.transaction(
      async () => {
        const online = players.length ? sql` or lower(${Q.username}) in ${players}` : empty;
        const rows = await DeliveryQueue.select(
          this.#db,
          sql`where ${Q.serverId} = ${serverId} and ${due()} and (${Q.requireOnline} = ${false}${online})
        order by ${Q.id} limit ${countParam(limit)}${raw(this.#db.forUpdate)}`,
        );
        const at = now();
        const leaseUntil = addSeconds(at, this.#lease.leaseSeconds);
        const out: ClaimedRow[] = [];
        const { timezone } = this.#settings.get();
        for (const r of rows) {
          // Conditional: a validate or another claimer that took the row first leaves nothing to update.
          const { affectedRows } = await this.#db.run(sql`update ${DeliveryQueue}
          set ${Q.status} = 'claimed', ${Q.leaseUntil} = ${leaseUntil}, ${Q.updatedDate} = ${at}
          where ${Q.id} = ${r.id} and ${Q.status} = 'waiting'`);
          if (affectedRows === 1) {
            out.push({
              id: String(r.id),
              command: r.command,
              username: r.username,
              userID: String(r.userId),
              orderID: String(r.orderId),
              productID: String(r.productId),
              trigger: r.runOn,
              tries: String(r.tries),
              leaseUntil: displayTimestamp(leaseUntil, timezone),
            });
          }
        }
        return out;
      },
      { causal: true },
    );
  }

  async ack(token: string, ids: number[], result: 'done' | 'failed', message: string): Promise<string[]> {
    const serverId = await this.serverByToken(token);
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return [];
    const settled = await this.#db.transaction(
      async () => {
        const at = now();
        const settled: string[] = [];
        for (const id of wanted) {
          // Only while the lease holds: once it lapsed the row may be someone else's claim.
          const { affectedRows } =
            result === 'done'
              ? await this.#db.run(sql`update ${DeliveryQueue} set ${Q.status} = 'done', ${Q.leaseUntil} = null, ${Q.lastError} = null, ${Q.updatedDate} = ${at}
            where ${Q.id} = ${id} and ${Q.serverId} = ${serverId} and ${Q.status} = 'claimed' and ${Q.leaseUntil} >= ${at}`)
              : // Handed out again only after a delay that grows with each try (the sweep wakes the server
                // then): a command that fails at once would otherwise use up its tries within a second.
                // not_before is set before tries changes: MySQL evaluates the assignments in order.
                await this.#db.run(sql`update ${DeliveryQueue}
            set ${Q.status} = case when ${Q.tries} + 1 >= ${this.#lease.maxTries} then 'failed' else 'waiting' end, ${Q.notBefore} = ${this.#retryAt(at)},
             ${Q.tries} = ${Q.tries} + 1, ${Q.leaseUntil} = null, ${Q.lastError} = ${message.slice(0, 2000)}, ${Q.updatedDate} = ${at}
             where ${Q.id} = ${id} and ${Q.serverId} = ${serverId} and ${Q.status} = 'claimed' and ${Q.leaseUntil} >= ${at}`);
          if (affectedRows === 1) settled.push(String(id));
        }
        if (result === 'failed') await this.#toldFailed(settled.map(Number));
        return settled;
      },
      { causal: true },
    );
    // Not a success unless every row was settled: a plugin that reads only the status must not take
    // a row whose lease had lapsed (and may go to another claimer) for one it reported.
    if (settled.length < wanted.length) {
      const unsettled = wanted.map(String).filter((id) => !settled.includes(id));
      throw new DomainError(
        'DELIVERY_NOT_SETTLED',
        `${unsettled.length} of ${wanted.length} rows were not settled: not claimed by this server or their ` +
          `lease had lapsed (${unsettled.slice(0, 10).join(', ')}${unsettled.length > 10 ? ', …' : ''}).`,
        { details: { ids: settled, unsettled } },
      );
    }
    return settled;
  }

  /** Of these rows, those `failed` now are told to listeners (webhooks), in the transaction that failed them. */
  async #toldFailed(ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const q of await DeliveryQueue.select(this.#db, sql`where ${Q.id} in ${ids} and ${Q.status} = 'failed'`)) {
      await this.#events.emit('delivery.failed', {
        queueId: q.id,
        serverId: q.serverId,
        orderId: q.orderId,
        userId: q.userId,
        username: q.username,
        command: q.command,
        error: q.lastError ?? '',
      });
    }
  }

  // ---- sweeps: lapsed leases, and streams woken for other instances' work

  /**
   * Claims whose lease ran out go back to waiting with one more try, or to `failed` at maxTries.
   * One conditional statement: a late ack and this sweep cannot both settle the same row. Then the
   * servers whose delayed retries came due since the last sweep are woken to claim them.
   */
  async expireLeases(): Promise<number> {
    const at = now();
    const { affectedRows } = await this.#db.transaction(async () => {
      // Locked, so that of two instances sweeping at once only the one that fails a row tells of it.
      const failing = await this.#db.query(sql`select ${QUEUE_ID} from ${DeliveryQueue}
        where ${Q.status} = 'claimed' and ${Q.leaseUntil} < ${at} and ${Q.tries} + 1 >= ${this.#lease.maxTries}${raw(this.#db.forUpdate)}`);
      const swept = await this.#db.run(sql`update ${DeliveryQueue}
        set ${Q.status} = case when ${Q.tries} + 1 >= ${this.#lease.maxTries} then 'failed' else 'waiting' end, ${Q.tries} = ${Q.tries} + 1,
         ${Q.leaseUntil} = null, ${Q.lastError} = ${'the lease ran out before an ack'}, ${Q.updatedDate} = ${at}
         where ${Q.status} = 'claimed' and ${Q.leaseUntil} < ${at}`);
      await this.#toldFailed(failing.map((r) => Number(r.id)));
      return swept;
    });
    if (affectedRows > 0) this.#wakeups.wakeAll();
    if (at > this.#dueSince) {
      const came = await this.#db.query(sql`select distinct ${QUEUE_SERVER} from ${DeliveryQueue}
        where ${Q.status} = 'waiting' and ${Q.notBefore} >= ${this.#dueSince} and ${Q.notBefore} < ${at}`);
      this.#dueSince = at;
      this.#wakeups.wake(came.map((r) => Number(r.server_id)));
    }
    return affectedRows;
  }

  /**
   * Wakes this process's streams for work that other processes (instances on one database)
   * queued or put back: the waiting rows of every server with a stream here are read again, and
   * a server whose rows changed is woken. The first read of a server wakes it if it has any. Rows
   * still in their retry delay do not count: they wake nobody until they come due.
   */
  async wakeForOthers(): Promise<void> {
    const servers = this.#wakeups.servers();
    for (const id of this.#waitingSeen.keys()) if (!servers.includes(id)) this.#waitingSeen.delete(id);
    if (servers.length === 0) return;
    const rows = await this.#db.query(sql`select ${WAITING}
      from ${DeliveryQueue} where ${due()} and ${Q.serverId} in ${servers} group by ${Q.serverId}`);
    const current = new Map(rows.map((r) => [Number(r.server_id), `${r.n}:${r.ids}`]));
    const changed = servers.filter((id) => (current.get(id) ?? '0') !== (this.#waitingSeen.get(id) ?? '0'));
    for (const id of servers) this.#waitingSeen.set(id, current.get(id) ?? '0');
    this.#wakeups.wake(changed);
  }
}
