/** Admin queue views and health: the queue listed and acted on by staff, its backlog per server, and the dashboard's figures. */
import type { AuditLog } from '../../core/audit.ts';
import { countParam, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, displayTimestamp, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, fields, sql, sum, typed, where, type Sql } from '../../core/sql.ts';
import type { QueueFilter, QueueRow } from './contract.ts';
import { DeliveryQueue, DeliveryServer } from './entities.ts';
import type { DeliveryDeps, Queued } from './model.ts';
import type { Wakeups } from './wakeups.ts';

const S = DeliveryServer.c;
const Q = DeliveryQueue.c;
const s = DeliveryServer.as('s');

export class DeliveryViews {
  readonly #db: Database;
  readonly #settings: SettingsService;
  readonly #audit: AuditLog;
  readonly #wakeups: Wakeups;
  readonly #watch: { silentMinutes: number; stuckMinutes: number };

  constructor(deps: DeliveryDeps) {
    this.#db = deps.db;
    this.#settings = deps.settings;
    this.#audit = deps.audit;
    this.#wakeups = deps.wakeups;
    this.#watch = deps.watch;
  }

  #queueRow(q: Queued): QueueRow {
    const { timezone } = this.#settings.get();
    return {
      id: String(q.id),
      serverID: String(q.serverId),
      userID: String(q.userId),
      username: q.username,
      orderID: String(q.orderId),
      productID: String(q.productId),
      command: q.command,
      trigger: q.runOn,
      requireOnline: q.requireOnline,
      status: q.status,
      tries: String(q.tries),
      leaseUntil: q.leaseUntil === null ? null : displayTimestamp(q.leaseUntil, timezone),
      lastError: q.lastError,
      creationDate: displayTimestamp(q.creationDate, timezone),
      updatedDate: displayTimestamp(q.updatedDate, timezone),
    };
  }

  /**
   * Commands not delivered yet, by game server: `waiting` to be handed out, `claimed` and not
   * acked. Every server is listed, with zeros when it has nothing pending.
   */
  async backlog(): Promise<{ serverId: number; waiting: number; claimed: number }[]> {
    const q = DeliveryQueue.as('q');
    const rows = await this.#db.query(
      sql`select ${fields({ server_id: s.c.id, status: typed<string | null>(q.c.status), n: count(q.c.id) })}
      from ${s} left join ${q} on ${q.c.serverId} = ${s.c.id} and ${q.c.status} in ('waiting', 'claimed')
      group by ${s.c.id}, ${q.c.status} order by ${s.c.id}`,
    );
    const byServer = new Map<number, { serverId: number; waiting: number; claimed: number }>();
    for (const r of rows) {
      const id = Number(r.server_id);
      const entry = byServer.get(id) ?? { serverId: id, waiting: 0, claimed: 0 };
      if (r.status === 'waiting' || r.status === 'claimed') entry[r.status] = Number(r.n);
      byServer.set(id, entry);
    }
    return [...byServer.values()];
  }

  /**
   * What the dashboard shows: commands not yet delivered, those among them stuck (unchanged for
   * `stuckMinutes`), those that failed for good, and active servers silent for `silentMinutes`.
   */
  async health(): Promise<{ backlog: number; stuck: number; failed: number; silentServers: number; silentMinutes: number; stuckMinutes: number }> {
    const { silentMinutes, stuckMinutes } = this.#watch;
    const at = now();
    const pending = ['waiting', 'claimed'];
    const [queue] = await this.#db.query(sql`
      select ${fields({
        backlog: sum(sql`case when ${Q.status} in ${pending} then 1 else 0 end`),
        stuck: sum(sql`case when ${Q.status} in ${pending} and ${Q.updatedDate} < ${addSeconds(at, -stuckMinutes * 60)} then 1 else 0 end`),
        failed: sum(sql`case when ${Q.status} = 'failed' then 1 else 0 end`),
      })}
      from ${DeliveryQueue} where ${Q.status} in ${[...pending, 'failed']}`);
    const [silent] = await this.#db.query(sql`select ${fields({ n: count() })} from ${DeliveryServer}
      where ${S.isActive} = ${true} and (${S.lastSeenDate} is null or ${S.lastSeenDate} < ${addSeconds(at, -silentMinutes * 60)})`);
    return {
      backlog: Number(queue?.backlog ?? 0),
      stuck: Number(queue?.stuck ?? 0),
      failed: Number(queue?.failed ?? 0),
      silentServers: Number(silent!.n),
      silentMinutes,
      stuckMinutes,
    };
  }

  async listQueue(f: QueueFilter): Promise<QueueRow[]> {
    const conditions: Sql[] = [];
    for (const [column, value] of [
      [Q.serverId, f.serverId],
      [Q.status, f.status],
      [Q.userId, f.userId],
      [Q.orderId, f.orderId],
    ] as const) {
      if (value !== undefined) conditions.push(sql`${column} = ${value}`);
    }
    if (f.orderIds) {
      const ids = f.orderIds.filter((id) => Number.isSafeInteger(id) && id > 0);
      if (ids.length === 0) return [];
      conditions.push(sql`${Q.orderId} in ${ids}`);
    }
    const rows = await DeliveryQueue.select(
      this.#db,
      sql`${where(...conditions)} order by ${Q.id} desc limit ${countParam(f.perPage)} offset ${countParam((f.page - 1) * f.perPage)}`,
    );
    return rows.map((r) => this.#queueRow(r));
  }

  async #queueEntry(id: number): Promise<Queued> {
    const entry = await DeliveryQueue.find(this.#db, id);
    if (!entry) throw new DomainError('DELIVERY_QUEUE_NOT_FOUND', `No queued command with ID ${id}.`);
    return entry;
  }

  #recordQueueChange(row: Queued, status: 'waiting' | 'cancelled'): Promise<void> {
    return this.#audit.record({
      action: status === 'waiting' ? 'delivery.command.redeliver' : 'delivery.command.cancel',
      target: { type: 'delivery', id: row.id },
      summary: `${status === 'waiting' ? 'Queued again' : 'Cancelled'} "${row.command}" for ${row.username} (order ${row.orderId})`,
      before: { status: row.status },
      after: { status },
    });
  }

  async redeliver(id: number): Promise<QueueRow> {
    const row = await this.#db.transaction(async () => {
      const current = await this.#queueEntry(id);
      const { affectedRows } = await this.#db.run(sql`update ${DeliveryQueue}
        set ${Q.status} = 'waiting', ${Q.tries} = 0, ${Q.leaseUntil} = null, ${Q.notBefore} = null, ${Q.updatedDate} = ${now()}
        where ${Q.id} = ${id} and ${Q.status} in ('done', 'failed', 'cancelled')`);
      if (affectedRows === 0) throw new DomainError('CONFLICT', `Queued command ${id} is ${current.status}: it will be delivered already.`);
      await this.#recordQueueChange(current, 'waiting');
      return this.#queueEntry(id);
    });
    this.#wakeups.wake([row.serverId]);
    return this.#queueRow(row);
  }

  async cancel(id: number): Promise<QueueRow> {
    return this.#db.transaction(async () => {
      const current = await this.#queueEntry(id);
      const { affectedRows } = await this.#db.run(sql`update ${DeliveryQueue} set ${Q.status} = 'cancelled', ${Q.leaseUntil} = null, ${Q.updatedDate} = ${now()}
        where ${Q.id} = ${id} and ${Q.status} in ('waiting', 'claimed')`);
      if (affectedRows === 0) throw new DomainError('CONFLICT', `Queued command ${id} is ${current.status}: there is nothing left to cancel.`);
      await this.#recordQueueChange(current, 'cancelled');
      return this.#queueRow(await this.#queueEntry(id));
    });
  }
}
