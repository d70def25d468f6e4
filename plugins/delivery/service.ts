/**
 * Delivery: game servers, the commands a product runs on them, and the queue of rendered commands
 * the servers' plugins fetch. Handing a row out and marking it done is one conditional update, so a
 * row reaches a game server at most once however many pollers ask at the same time.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AuditLog } from '../../core/audit.ts';
import { countParam, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, displayTimestamp, hasControlCharacter, now } from '../../core/format.ts';
import type { EventBus } from '../../core/events.ts';
import type { SettingsService } from '../../core/settings.ts';
import { empty, join, raw, sql, where, type Sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { OrderItemEvent, StoreService } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type {
  ClaimedRow, CommandInput, CommandRow, DeliveryService, HandedOut, PluginQueueRow, QueueFilter, QueueRow, ServerRow, Trigger,
} from './contract.ts';
import { DeliveryCommand, DeliveryQueue, DeliveryServer, SERVER_QUEUE_INDEX } from './entities.ts';

type Server = TableRecord<typeof DeliveryServer>;
type Command = TableRecord<typeof DeliveryCommand>;
type Queued = TableRecord<typeof DeliveryQueue>;
/** The plugin fetches its whole list each poll: a bound keeps one poll cheap after an outage. */
const PLUGIN_QUEUE_LIMIT = 500;
const S = DeliveryServer.c;
const C = DeliveryCommand.c;
const Q = DeliveryQueue.c;
/** A buy's delivery lookup: its commands joined to their servers. */
const c = DeliveryCommand.as('c');
const s = DeliveryServer.as('s');
/** The product id of chargeback commands: they belong to no product. */
const CHARGEBACK_PRODUCT = 0;
/** "Seen" is for staff spotting a server that stopped polling: to the nearest 10 s is plenty. */
const SEEN_RESOLUTION_MS = 10_000;

const PLACEHOLDERS = new Set(['username', 'userID', 'quantity', 'orderID', 'productID', 'productName', 'chatUserID']);
const VARIABLE = /^var:([A-Za-z0-9_.-]{1,64})$/;

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** Refuses a command with a placeholder the renderer would not fill: it would reach the game server as typed. */
function checkPlaceholders(command: string): void {
  for (const [, name] of command.matchAll(/\{([^{}]*)\}/g)) {
    if (!PLACEHOLDERS.has(name!) && !VARIABLE.test(name!)) {
      throw new DomainError('VALIDATION_ERROR', `command: unknown placeholder {${name}}; use ${[...PLACEHOLDERS].map((p) => `{${p}}`).join(', ')} or ` +
        `{var:<name>}.`);
    }
  }
}

export interface RenderContext {
  username: string;
  userId: number;
  orderId: number;
  chatUserId: string;
  item: OrderItemEvent;
  /** The quantity {quantity} stands for: 1 for a command run once per unit. */
  quantity: number;
}

const CONTROL_WHY = 'holds a line break or another control character: a game server would run what follows it as a command of its own';

/**
 * The command as the game server gets it. Whatever the entry points let through (a value stored
 * before they checked, a future caller), a command with a control character is refused, never
 * emitted or stripped: the caller's transaction (a buy) rolls back and nothing is queued.
 */
function render(command: string, c: RenderContext): string {
  const values: Record<string, string> = {
    username: c.username, userID: String(c.userId), quantity: String(c.quantity), orderID: String(c.orderId),
    productID: String(c.item.productId), productName: c.item.productName, chatUserID: c.chatUserId,
  };
  const of = c.item.productId === CHARGEBACK_PRODUCT ? 'a chargeback command' : `the command of product ${c.item.productId}`;
  if (hasControlCharacter(command)) throw new DomainError('VALIDATION_ERROR', `command: ${of} ${CONTROL_WHY}.`);
  return command.replace(/\{([^{}]*)\}/g, (whole, name: string) => {
    const variable = VARIABLE.exec(name);
    if (variable) {
      const value = Object.hasOwn(c.item.variables, variable[1]!) ? c.item.variables[variable[1]!]! : '';
      if (hasControlCharacter(value)) {
        throw new DomainError('INVALID_VARIABLE', `Invalid variable for product ${c.item.productId}: "${variable[1]}" ${CONTROL_WHY}.`);
      }
      return value;
    }
    const value = Object.hasOwn(values, name) ? values[name]! : whole;
    if (hasControlCharacter(value)) throw new DomainError('VALIDATION_ERROR', `${name}: in ${of}, {${name}} ${CONTROL_WHY}.`);
    return value;
  });
}

/** Who listens for new work, by server: the SSE streams of this process. */
export class Wakeups {
  readonly #listeners = new Map<number, Set<() => void>>();

  listen(serverId: number, fn: () => void): () => void {
    let set = this.#listeners.get(serverId);
    if (!set) this.#listeners.set(serverId, set = new Set());
    set.add(fn);
    return () => set.delete(fn);
  }

  wake(serverIds: Iterable<number>): void {
    for (const id of new Set(serverIds)) for (const fn of this.#listeners.get(id) ?? []) fn();
  }

  wakeAll(): void {
    this.wake(this.#listeners.keys());
  }

  /** Servers with a stream open in this process. */
  servers(): number[] {
    return [...this.#listeners].filter(([, set]) => set.size > 0).map(([id]) => id);
  }
}

export interface LeaseOptions {
  leaseSeconds: number;
  maxTries: number;
  /** A `failed` ack's wait before the row goes out again: base × factor^(tries − 1), at most max. */
  retryBaseSeconds: number;
  retryFactor: number;
  retryMaxSeconds: number;
}

/** Rows a claimer or the plugin may be handed now: waiting, and past any retry delay. */
const due = () => sql`${Q.status} = 'waiting' and (${Q.notBefore} is null or ${Q.notBefore} < ${now()})`;

export class DbDeliveryService implements DeliveryService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #store: StoreService;
  readonly #users: UsersService;
  readonly #wakeups: Wakeups;
  readonly #lease: LeaseOptions;
  readonly #audit: AuditLog;
  readonly #watch: { silentMinutes: number; stuckMinutes: number };
  /** When each server's last_seen_date was last written, so a polling server costs a write every few seconds, not every poll. */
  readonly #seenWritten = new Map<number, number>();
  /** The sweep wakes the servers whose delayed rows came due since this time. */
  #dueSince = now();

  constructor(deps: {
    db: Database; events: EventBus; settings: SettingsService; store: StoreService; users: UsersService; audit: AuditLog; wakeups: Wakeups;
    lease: LeaseOptions; watch: { silentMinutes: number; stuckMinutes: number };
  }) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#store = deps.store;
    this.#users = deps.users;
    this.#wakeups = deps.wakeups;
    this.#lease = deps.lease;
    this.#audit = deps.audit;
    this.#watch = deps.watch;
  }

  /** `not_before` of a row acked as failed at `at`, chosen by the tries it had: one bound delay per try. */
  #retryAt(at: string): Sql {
    const { maxTries, retryBaseSeconds, retryFactor, retryMaxSeconds } = this.#lease;
    if (maxTries <= 1) return raw('null');
    const whens = Array.from({ length: maxTries - 1 }, (_, tries) =>
      sql`when ${tries} then ${addSeconds(at, Math.min(retryBaseSeconds * retryFactor ** tries, retryMaxSeconds))}`);
    return sql`case ${Q.tries} ${join(whens, ' ')} else null end`;
  }

  #serverRow(s: Server): ServerRow {
    const { timezone } = this.#settings.get();
    return {
      id: String(s.id), name: s.name, isActive: s.isActive,
      lastSeenDate: s.lastSeenDate === null ? null : displayTimestamp(s.lastSeenDate, timezone),
      creationDate: displayTimestamp(s.creationDate, timezone),
    };
  }

  async listServers(): Promise<ServerRow[]> {
    return (await DeliveryServer.select(this.#db, sql`order by ${S.id}`)).map((server) => this.#serverRow(server));
  }

  async getServer(id: number): Promise<ServerRow> {
    return this.#serverRow(await this.#server(id));
  }

  async #server(id: number): Promise<Server> {
    const server = await DeliveryServer.find(this.#db, id);
    if (!server) throw new DomainError('DELIVERY_SERVER_NOT_FOUND', `No game server with ID ${id}.`);
    return server;
  }

  async createServer(input: { name: string; isActive: boolean }): Promise<ServerRow & { token: string }> {
    const token = newToken();
    const id = await DeliveryServer.insert(this.#db, {
      name: input.name, tokenHash: hashToken(token), isActive: input.isActive, lastSeenDate: null, creationDate: now(),
    });
    return { ...await this.getServer(id), token };
  }

  async updateServer(id: number, patch: { name?: string; isActive?: boolean }): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      await this.#server(id);
      await DeliveryServer.update(this.#db, id, { name: patch.name, isActive: patch.isActive });
      return this.getServer(id);
    });
  }

  async deleteServer(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(sql`delete from ${DeliveryServer} where ${S.id} = ${id}`);
      if (affectedRows === 0) throw new DomainError('DELIVERY_SERVER_NOT_FOUND', `No game server with ID ${id}.`);
      // Its commands could never be fetched again; its queued rows stay for the record, cancelled.
      await this.#db.run(sql`delete from ${DeliveryCommand} where ${C.serverId} = ${id}`);
      await this.#db.run(sql`update ${DeliveryQueue} set ${Q.status} = 'cancelled', ${Q.updatedDate} = ${now()}
        where ${Q.serverId} = ${id} and ${Q.status} in ('waiting', 'claimed')`);
    });
  }

  async rotateToken(id: number): Promise<ServerRow & { token: string }> {
    const token = newToken();
    if (await DeliveryServer.update(this.#db, id, { tokenHash: hashToken(token) }) === 0) throw new DomainError('DELIVERY_SERVER_NOT_FOUND',
      `No game server with ID ${id}.`);
    return { ...await this.getServer(id), token };
  }

  async #requireProduct(productId: number): Promise<void> {
    if (await this.#store.productName(productId) === undefined) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${productId}.`);
  }

  async listCommands(productId: number): Promise<CommandRow[]> {
    await this.#requireProduct(productId);
    return (await DeliveryCommand.select(this.#db, sql`where ${C.productId} = ${productId} order by ${C.id}`)).map(commandRow);
  }

  async #command(productId: number, commandId: number): Promise<Command> {
    const [command] = await DeliveryCommand.select(this.#db, sql`where ${C.id} = ${commandId} and ${C.productId} = ${productId}`);
    if (!command) throw new DomainError('DELIVERY_COMMAND_NOT_FOUND', `Product ${productId} has no command with ID ${commandId}.`);
    return command;
  }

  async #getCommand(productId: number, commandId: number): Promise<CommandRow> {
    return commandRow(await this.#command(productId, commandId));
  }

  async #check(input: CommandInput): Promise<void> {
    if (hasControlCharacter(input.command)) throw new DomainError('VALIDATION_ERROR', `command: ${CONTROL_WHY}.`);
    checkPlaceholders(input.command);
    await this.getServer(input.serverID);
  }

  /** The commands every chargeback runs (a payment refunded or disputed at the gateway), per game server. */
  async chargebackCommands(): Promise<CommandRow[]> {
    return (await DeliveryCommand.select(this.#db, sql`where ${C.productId} = ${CHARGEBACK_PRODUCT} and ${C.runOn} = 'chargeback' order by ${C.id}`))
      .map(commandRow);
  }

  async addChargebackCommand(serverId: number, command: string): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      await this.#check({ serverID: serverId, command, trigger: 'purchase', requireOnline: false, perUnit: false });
      const id = await DeliveryCommand.insert(this.#db, {
        productId: CHARGEBACK_PRODUCT, serverId, command, runOn: 'chargeback', requireOnline: false, perUnit: false,
      });
      await this.#audit.record({ action: 'delivery.chargeback.create', target: { type: 'command', id }, summary: `Chargebacks run "${command}"`,
        after: { serverId, command } });
      return this.#getCommand(CHARGEBACK_PRODUCT, id);
    });
  }

  async deleteChargebackCommand(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const [current] = await DeliveryCommand.select(this.#db, sql`where ${C.id} = ${id} and ${C.productId} = ${CHARGEBACK_PRODUCT}`);
      if (!current) throw new DomainError('DELIVERY_COMMAND_NOT_FOUND', `No chargeback command with ID ${id}.`);
      await this.#db.run(sql`delete from ${DeliveryCommand} where ${DeliveryCommand.c.id} = ${id}`);
      await this.#audit.record({ action: 'delivery.chargeback.delete', target: { type: 'command', id },
        summary: `Chargebacks no longer run "${current.command}"`,
        before: { serverId: current.serverId, command: current.command } });
    });
  }

  /**
   * A payment charged back (`payments.reversed`): every chargeback command queued for its player,
   * in the reversal's transaction, under the payment's order.
   */
  async chargeback(player: { userId: number; username: string; linkedAccounts: Record<string, string>; orderId: number }): Promise<void> {
    const commands = await this.chargebackCommands();
    if (commands.length === 0) return;
    const at = now();
    const item = { productId: CHARGEBACK_PRODUCT, productName: '', quantity: 1, variables: {} };
    const rows = commands.map((c) => ({
      serverId: Number(c.serverID), userId: player.userId, username: player.username, orderId: player.orderId, productId: CHARGEBACK_PRODUCT,
      command: render(c.command, { username: player.username, userId: player.userId, orderId: player.orderId, chatUserId: player.linkedAccounts.chat ?? '',
        item, quantity: 1 }),
      runOn: 'chargeback' as const, requireOnline: false, status: 'waiting' as const, tries: 0, notBefore: null, lastError: null,
      creationDate: at, updatedDate: at,
    }));
    await DeliveryQueue.insertMany(this.#db, rows);
    this.#db.afterCommit(() => this.#wakeups.wake(rows.map((r) => r.serverId)));
  }

  async createCommand(productId: number, input: CommandInput): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      await this.#requireProduct(productId);
      await this.#check(input);
      const id = await DeliveryCommand.insert(this.#db, { productId, ...commandColumns(input) });
      return this.#getCommand(productId, id);
    });
  }

  async updateCommand(productId: number, commandId: number, patch: Partial<CommandInput>): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      const current = await this.#command(productId, commandId);
      const next: CommandInput = {
        serverID: patch.serverID ?? current.serverId, command: patch.command ?? current.command,
        trigger: patch.trigger ?? (current.runOn as Trigger), requireOnline: patch.requireOnline ?? current.requireOnline,
        perUnit: patch.perUnit ?? current.perUnit,
      };
      await this.#check(next);
      await DeliveryCommand.update(this.#db, commandId, commandColumns(patch));
      return this.#getCommand(productId, commandId);
    });
  }

  async deleteCommand(productId: number, commandId: number): Promise<void> {
    const { affectedRows } = await this.#db.run(sql`delete from ${DeliveryCommand} where ${C.id} = ${commandId} and ${C.productId} = ${productId}`);
    if (affectedRows === 0) throw new DomainError('DELIVERY_COMMAND_NOT_FOUND', `Product ${productId} has no command with ID ${commandId}.`);
  }

  /**
   * Queues the commands of `trigger` for what an order bought. Called inside the order's (or the
   * refund's, or the expiry's) transaction: the rows commit or roll back with it.
   */
  async enqueue(trigger: Trigger, order: { orderId: number; userId: number; username: string; linkedAccounts: Record<string,
    string>; items: OrderItemEvent[] }): Promise<void> {
    const productIds = [...new Set(order.items.map((i) => i.productId))];
    if (productIds.length === 0) return;
    const commands = (await this.#db.queryArrays(sql`select ${c.columns} from ${c} join ${s} on ${s.c.id} = ${c.c.serverId}
       where ${c.c.runOn} = ${trigger} and ${s.c.isActive} = ${true} and ${c.c.productId} in ${productIds} order by ${c.c.id}`))
      .map((row) => DeliveryCommand.fromArray(row));
    if (commands.length === 0) return;
    const chatUserId = order.linkedAccounts.chat ?? '';
    const at = now();
    const rows: Omit<Queued, 'id' | 'leaseUntil'>[] = [];
    for (const item of order.items) {
      for (const c of commands.filter((c) => c.productId === item.productId)) {
        const text = render(c.command, { username: order.username, userId: order.userId, orderId: order.orderId, chatUserId, item,
          quantity: c.perUnit ? 1 : item.quantity });
        for (let n = c.perUnit ? item.quantity : 1; n > 0; n--) {
          rows.push({
            serverId: c.serverId, userId: order.userId, username: order.username, orderId: order.orderId, productId: item.productId,
            command: text, runOn: trigger, requireOnline: c.requireOnline, status: 'waiting', tries: 0, notBefore: null, lastError: null,
            creationDate: at, updatedDate: at,
          });
        }
      }
    }
    await DeliveryQueue.insertMany(this.#db, rows);
    const servers = rows.map((r) => r.serverId);
    this.#db.afterCommit(() => this.#wakeups.wake(servers));
  }

  /**
   * A refunded order: its purchase commands no game server has taken yet are cancelled, so nothing
   * of it runs after the refund, then its refund commands are queued. Inside the refund's
   * transaction; the conditional update decides each row against a concurrent hand-out.
   */
  async orderRefunded(order: Parameters<DbDeliveryService['enqueue']>[1]): Promise<void> {
    await this.#db.run(sql`update ${DeliveryQueue}
      set ${Q.status} = 'cancelled', ${Q.lastError} = ${'the order was refunded before a game server took the command'},
      ${Q.updatedDate} = ${now()} where ${Q.orderId} = ${order.orderId} and ${Q.runOn} = 'purchase' and ${Q.status} = 'waiting'`);
    await this.enqueue('refund', order);
  }

  /** A role a purchase granted ran out: the `expiry` commands of the products that granted it. */
  async roleExpired(userId: number, roleId: number): Promise<void> {
    const purchase = await this.#store.lastPurchaseGranting(userId, roleId);
    const user = purchase && await this.#users.findById(userId);
    if (purchase && user) await this.enqueue('expiry',
      { orderId: purchase.orderId, userId, username: user.username, linkedAccounts: user.linkedAccounts, items: purchase.items });
  }

  /**
   * Claims whose lease ran out go back to waiting with one more try, or to `failed` at maxTries.
   * One conditional statement: a late ack and this sweep cannot both settle the same row. Then the
   * servers whose delayed retries came due since the last sweep are woken to claim them.
   */
  async expireLeases(): Promise<number> {
    const at = now();
    const { affectedRows } = await this.#db.transaction(async () => {
      // Locked, so that of two instances sweeping at once only the one that fails a row tells of it.
      const failing = await this.#db.query<{ id: number }>(sql`select ${Q.id} as id from ${DeliveryQueue}
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
      const came = await this.#db.query<{ server_id: number }>(sql`select distinct ${Q.serverId} as server_id from ${DeliveryQueue}
        where ${Q.status} = 'waiting' and ${Q.notBefore} >= ${this.#dueSince} and ${Q.notBefore} < ${at}`);
      this.#dueSince = at;
      this.#wakeups.wake(came.map((r) => Number(r.server_id)));
    }
    return affectedRows;
  }

  /** Each streamed server's waiting rows due now (count and sum of ids) when last read by wakeForOthers. */
  readonly #waitingSeen = new Map<number, string>();

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
    const rows = await this.#db.query<{ server_id: number; n: number; ids: number }>(sql`select ${Q.serverId} as server_id, count(*) as n, sum(${Q.id}) as ids
      from ${DeliveryQueue} where ${due()} and ${Q.serverId} in ${servers} group by ${Q.serverId}`);
    const current = new Map(rows.map((r) => [Number(r.server_id), `${r.n}:${r.ids}`]));
    const changed = servers.filter((id) => (current.get(id) ?? '0') !== (this.#waitingSeen.get(id) ?? '0'));
    for (const id of servers) this.#waitingSeen.set(id, current.get(id) ?? '0');
    this.#wakeups.wake(changed);
  }

  /**
   * Commands not delivered yet, by game server: `waiting` to be handed out, `claimed` and not
   * acked. Every server is listed, with zeros when it has nothing pending.
   */
  async backlog(): Promise<{ serverId: number; waiting: number; claimed: number }[]> {
    const q = DeliveryQueue.as('q');
    const rows = await this.#db.query<{ server_id: number; status: string | null; n: number }>(
      sql`select ${s.c.id} as server_id, ${q.c.status} as status, count(${q.c.id}) as n
      from ${s} left join ${q} on ${q.c.serverId} = ${s.c.id} and ${q.c.status} in ('waiting', 'claimed')
      group by ${s.c.id}, ${q.c.status} order by ${s.c.id}`);
    const byServer = new Map<number, { serverId: number; waiting: number; claimed: number }>();
    for (const r of rows) {
      const id = Number(r.server_id);
      const entry = byServer.get(id) ?? { serverId: id, waiting: 0, claimed: 0 };
      if (r.status === 'waiting' || r.status === 'claimed') entry[r.status] = Number(r.n);
      byServer.set(id, entry);
    }
    return [...byServer.values()];
  }

  async serverOf(token: string): Promise<number> {
    return this.#serverByToken(token);
  }

  async claim(token: string, limit: number, online: string[]): Promise<ClaimedRow[]> {
    const serverId = await this.#serverByToken(token);
    const players = [...new Set(online.map((n) => n.toLowerCase()))].slice(0, 1000);
    return this.#db.transaction(async () => {
      const online = players.length ? sql` or lower(${Q.username}) in ${players}` : empty;
      const rows = await DeliveryQueue.select(this.#db, sql`where ${Q.serverId} = ${serverId} and ${due()} and (${Q.requireOnline} = ${false}${online})
        order by ${Q.id} limit ${countParam(limit)}${raw(this.#db.forUpdate)}`);
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
            id: String(r.id), command: r.command, username: r.username, userID: String(r.userId), orderID: String(r.orderId),
            productID: String(r.productId), trigger: r.runOn, tries: String(r.tries), leaseUntil: displayTimestamp(leaseUntil, timezone),
          });
        }
      }
      return out;
    }, { causal: true });
  }

  async ack(token: string, ids: number[], result: 'done' | 'failed', message: string): Promise<string[]> {
    const serverId = await this.#serverByToken(token);
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return [];
    const settled = await this.#db.transaction(async () => {
      const at = now();
      const settled: string[] = [];
      for (const id of wanted) {
        // Only while the lease holds: once it lapsed the row may be someone else's claim.
        const { affectedRows } = result === 'done'
          ? await this.#db.run(sql`update ${DeliveryQueue} set ${Q.status} = 'done', ${Q.leaseUntil} = null, ${Q.lastError} = null, ${Q.updatedDate} = ${at}
            where ${Q.id} = ${id} and ${Q.serverId} = ${serverId} and ${Q.status} = 'claimed' and ${Q.leaseUntil} >= ${at}`)
          // Handed out again only after a delay that grows with each try (the sweep wakes the server
          // then): a command that fails at once would otherwise use up its tries within a second.
          // not_before is set before tries changes: MySQL evaluates the assignments in order.
          : await this.#db.run(sql`update ${DeliveryQueue}
            set ${Q.status} = case when ${Q.tries} + 1 >= ${this.#lease.maxTries} then 'failed' else 'waiting' end, ${Q.notBefore} = ${this.#retryAt(at)},
             ${Q.tries} = ${Q.tries} + 1, ${Q.leaseUntil} = null, ${Q.lastError} = ${message.slice(0, 2000)}, ${Q.updatedDate} = ${at}
             where ${Q.id} = ${id} and ${Q.serverId} = ${serverId} and ${Q.status} = 'claimed' and ${Q.leaseUntil} >= ${at}`);
        if (affectedRows === 1) settled.push(String(id));
      }
      if (result === 'failed') await this.#toldFailed(settled.map(Number));
      return settled;
    }, { causal: true });
    // Not a success unless every row was settled: a plugin that reads only the status must not take
    // a row whose lease had lapsed (and may go to another claimer) for one it reported.
    if (settled.length < wanted.length) {
      const unsettled = wanted.map(String).filter((id) => !settled.includes(id));
      throw new DomainError('DELIVERY_NOT_SETTLED', `${unsettled.length} of ${wanted.length} rows were not settled: not claimed by this server or their ` +
        `lease had lapsed (${unsettled.slice(0, 10).join(', ')}${unsettled.length > 10 ? ', …' : ''}).`, { details: { ids: settled, unsettled } });
    }
    return settled;
  }

  /** Of these rows, those `failed` now are told to listeners (webhooks), in the transaction that failed them. */
  async #toldFailed(ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const q of await DeliveryQueue.select(this.#db, sql`where ${Q.id} in ${ids} and ${Q.status} = 'failed'`)) {
      await this.#events.emit('delivery.failed', {
        queueId: q.id, serverId: q.serverId, orderId: q.orderId, userId: q.userId, username: q.username, command: q.command, error: q.lastError ?? '',
      });
    }
  }

  #queueRow(q: Queued): QueueRow {
    const { timezone } = this.#settings.get();
    return {
      id: String(q.id), serverID: String(q.serverId), userID: String(q.userId), username: q.username, orderID: String(q.orderId),
      productID: String(q.productId), command: q.command, trigger: q.runOn, requireOnline: q.requireOnline, status: q.status,
      tries: String(q.tries), leaseUntil: q.leaseUntil === null ? null : displayTimestamp(q.leaseUntil, timezone), lastError: q.lastError,
      creationDate: displayTimestamp(q.creationDate, timezone), updatedDate: displayTimestamp(q.updatedDate, timezone),
    };
  }

  /** For the console's dashboard: commands still to hand out, and active servers not seen since `since` (stored UTC). */
  /**
   * What the dashboard shows: commands not yet delivered, those among them stuck (unchanged for
   * `stuckMinutes`), those that failed for good, and active servers silent for `silentMinutes`.
   */
  async health(): Promise<{ backlog: number; stuck: number; failed: number; silentServers: number; silentMinutes: number; stuckMinutes: number }> {
    const { silentMinutes, stuckMinutes } = this.#watch;
    const at = now();
    const pending = ['waiting', 'claimed'];
    const [queue] = await this.#db.query<{ backlog: number | string; stuck: number | string | null; failed: number | string | null }>(sql`
      select sum(case when ${Q.status} in ${pending} then 1 else 0 end) as backlog,
             sum(case when ${Q.status} in ${pending} and ${Q.updatedDate} < ${addSeconds(at, -stuckMinutes * 60)} then 1 else 0 end) as stuck,
             sum(case when ${Q.status} = 'failed' then 1 else 0 end) as failed
      from ${DeliveryQueue} where ${Q.status} in ${[...pending, 'failed']}`);
    const [silent] = await this.#db.query<{ n: number | string }>(sql`select count(*) as n from ${DeliveryServer}
      where ${S.isActive} = ${true} and (${S.lastSeenDate} is null or ${S.lastSeenDate} < ${addSeconds(at, -silentMinutes * 60)})`);
    return {
      backlog: Number(queue?.backlog ?? 0), stuck: Number(queue?.stuck ?? 0), failed: Number(queue?.failed ?? 0), silentServers: Number(silent!.n),
      silentMinutes, stuckMinutes,
    };
  }

  async listQueue(f: QueueFilter): Promise<QueueRow[]> {
    const conditions: Sql[] = [];
    for (const [column, value] of [[Q.serverId, f.serverId], [Q.status, f.status], [Q.userId, f.userId], [Q.orderId, f.orderId]] as const) {
      if (value !== undefined) conditions.push(sql`${column} = ${value}`);
    }
    if (f.orderIds) {
      const ids = f.orderIds.filter((id) => Number.isSafeInteger(id) && id > 0);
      if (ids.length === 0) return [];
      conditions.push(sql`${Q.orderId} in ${ids}`);
    }
    const rows = await DeliveryQueue.select(this.#db,
      sql`${where(...conditions)} order by ${Q.id} desc limit ${countParam(f.perPage)} offset ${countParam((f.page - 1) * f.perPage)}`);
    return rows.map((r) => this.#queueRow(r));
  }

  async #queueEntry(id: number): Promise<Queued> {
    const entry = await DeliveryQueue.find(this.#db, id);
    if (!entry) throw new DomainError('DELIVERY_QUEUE_NOT_FOUND', `No queued command with ID ${id}.`);
    return entry;
  }

  #recordQueueChange(row: Queued, status: 'waiting' | 'cancelled'): Promise<void> {
    return this.#audit.record({
      action: status === 'waiting' ? 'delivery.command.redeliver' : 'delivery.command.cancel', target: { type: 'delivery', id: row.id },
      summary: `${status === 'waiting' ? 'Queued again' : 'Cancelled'} "${row.command}" for ${row.username} (order ${row.orderId})`,
      before: { status: row.status }, after: { status },
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

  /** The active server a token belongs to, seen now. */
  async #serverByToken(token: string): Promise<number> {
    const [row] = await this.#db.query<{ id: number }>(
      sql`select ${S.id} as id from ${DeliveryServer} where ${S.tokenHash} = ${hashToken(token)} and ${S.isActive} = ${true}`);
    if (!row) throw new DomainError('DELIVERY_SERVER_NOT_FOUND', 'No active game server has this token.');
    const id = Number(row.id);
    const at = Date.now();
    if (at - (this.#seenWritten.get(id) ?? 0) >= SEEN_RESOLUTION_MS) {
      this.#seenWritten.set(id, at);
      await DeliveryServer.update(this.#db, id, { lastSeenDate: now() });
    }
    return id;
  }

  async pluginQueue(token: string): Promise<PluginQueueRow[]> {
    const serverId = await this.#serverByToken(token);
    // This mode cannot say who is online, so rows that need it are left to claimers that can.
    // Rows as arrays: a poll may list hundreds, and they are cheaper to make and read than objects.
    // MariaDB under load chose the status index about every other poll: a lookup and a sort per row.
    const queue = sql`${DeliveryQueue}${raw(this.#db.forceIndex(SERVER_QUEUE_INDEX))}`;
    const rows = await this.#db.queryArrays(sql`select ${Q.id}, ${Q.tries}, ${Q.updatedDate} from ${queue}
      where ${Q.serverId} = ${serverId} and ${due()} and ${Q.requireOnline} = ${false} order by ${Q.id} limit ${countParam(PLUGIN_QUEUE_LIMIT)}`);
    const { timezone } = this.#settings.get();
    return rows.map(([id, tries, updatedDate]) => ({
      id: String(id), status: Number(tries) > 0 ? 'error' : 'sending', retry: String(tries), updatedAt: displayTimestamp(String(updatedDate), timezone),
    }));
  }

  async validate(token: string, ids: number[]): Promise<HandedOut[]> {
    const serverId = await this.#serverByToken(token);
    const wanted = [...new Set(ids)].slice(0, PLUGIN_QUEUE_LIMIT);
    if (wanted.length === 0) return [];
    return this.#db.transaction(async () => {
      const rows = await this.#db.query<{ id: number; username: string; command: string }>(
        sql`select ${Q.id} as id, ${Q.username} as username, ${Q.command} as command from ${DeliveryQueue}
         where ${Q.serverId} = ${serverId} and ${due()} and ${Q.requireOnline} = ${false} and ${Q.id} in ${wanted} order by ${Q.id}${raw(this.#db.forUpdate)}`);
      // The plugin runs the whole answer under its first username: one player per call.
      const player = rows[0]?.username.toLowerCase();
      const out: HandedOut[] = [];
      const at = now();
      for (const r of rows.filter((r) => r.username.toLowerCase() === player)) {
        // The conditional update is what makes a row go out once: a concurrent validate or claim
        // that got it first leaves nothing to update here.
        const { affectedRows } = await this.#db.run(
          sql`update ${DeliveryQueue} set ${Q.status} = 'done', ${Q.updatedDate} = ${at} where ${Q.id} = ${r.id} and ${Q.status} = 'waiting'`);
        if (affectedRows === 1) out.push({ command: r.command, username: r.username });
      }
      return out;
    }, { causal: true });
  }
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

function commandRow(c: Command): CommandRow {
  return {
    id: String(c.id), productID: String(c.productId), serverID: String(c.serverId), command: c.command, trigger: c.runOn,
    requireOnline: c.requireOnline, perUnit: c.perUnit,
  };
}

/** A command as the API names it, as the table does. */
/** The columns of the fields given (undefined for the others, which a write leaves as they are). */
function commandColumns(c: Partial<CommandInput>): Partial<Omit<Command, 'id' | 'productId'>> {
  return { serverId: c.serverID, command: c.command, runOn: c.trigger, requireOnline: c.requireOnline, perUnit: c.perUnit };
}
