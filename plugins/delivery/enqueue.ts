/**
 * Enqueueing: what an order bought, refunded or let expire, and a chargeback, become rendered rows
 * of the queue. Each runs inside the caller's transaction (the buy, the refund, the reversal): the
 * rows commit or roll back with it, and the servers are woken once it commits.
 */
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { StoreOrders } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import { chargebackCommands } from './admin.ts';
import type { Trigger } from './contract.ts';
import { DeliveryCommand, DeliveryQueue, DeliveryServer } from './entities.ts';
import { CHARGEBACK_PRODUCT, type DeliveryDeps, type OrderDelivery, type Queued } from './model.ts';
import { render, renderOrRefuse } from './render.ts';
import type { Wakeups } from './wakeups.ts';

const Q = DeliveryQueue.c;
/** A buy's delivery lookup: its commands joined to their servers. */
const c = DeliveryCommand.as('c');
const s = DeliveryServer.as('s');

export class DeliveryEnqueue {
  readonly #db: Database;
  readonly #store: StoreOrders;
  readonly #users: UsersService;
  readonly #wakeups: Wakeups;

  constructor(deps: DeliveryDeps) {
    this.#db = deps.db;
    this.#store = deps.store;
    this.#users = deps.users;
    this.#wakeups = deps.wakeups;
  }

  /**
   * Queues the commands of `trigger` for what an order bought. Called inside the order's (or the
   * refund's, or the expiry's) transaction: the rows commit or roll back with it. A purchase whose
   * command the renderer refuses is refused whole; a refund or an expiry goes through, that command
   * kept as a failed row (renderOrRefuse).
   */
  async enqueue(trigger: Trigger, order: OrderDelivery): Promise<void> {
    const productIds = [...new Set(order.items.map((i) => i.productId))];
    if (productIds.length === 0) return;
    const commands = (
      await this.#db.queryArrays(sql`select ${c.columns} from ${c} join ${s} on ${s.c.id} = ${c.c.serverId}
       where ${c.c.runOn} = ${trigger} and ${s.c.isActive} = ${true} and ${c.c.productId} in ${productIds} order by ${c.c.id}`)
    ).map((row) => DeliveryCommand.fromArray(row));
    if (commands.length === 0) return;
    const chatUserId = order.linkedAccounts.chat ?? '';
    const at = now();
    const rows: Omit<Queued, 'id' | 'leaseUntil'>[] = [];
    for (const item of order.items) {
      for (const c of commands.filter((c) => c.productId === item.productId)) {
        const context = { username: order.username, userId: order.userId, orderId: order.orderId, chatUserId, item, quantity: c.perUnit ? 1 : item.quantity };
        const { text, refused } = trigger === 'purchase' ? { text: render(c.command, context), refused: undefined } : renderOrRefuse(c.command, context);
        for (let n = c.perUnit ? item.quantity : 1; n > 0; n--) {
          rows.push({
            serverId: c.serverId,
            userId: order.userId,
            username: order.username,
            orderId: order.orderId,
            productId: item.productId,
            command: text,
            runOn: trigger,
            requireOnline: c.requireOnline,
            status: refused ? 'failed' : 'waiting',
            tries: 0,
            notBefore: null,
            lastError: refused ?? null,
            creationDate: at,
            updatedDate: at,
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
  async orderRefunded(order: OrderDelivery): Promise<void> {
    await this.#db.run(sql`update ${DeliveryQueue}
      set ${Q.status} = 'cancelled', ${Q.lastError} = ${'the order was refunded before a game server took the command'},
      ${Q.updatedDate} = ${now()} where ${Q.orderId} = ${order.orderId} and ${Q.runOn} = 'purchase' and ${Q.status} = 'waiting'`);
    await this.enqueue('refund', order);
  }

  /** Deleted test orders (test mode cleared): their commands go too, run or not, so none is handed to a game server. */
  async ordersCleared(orderIds: number[]): Promise<void> {
    await this.#db.run(sql`delete from ${DeliveryQueue} where ${Q.orderId} in ${orderIds}`);
  }

  /** A role a purchase granted ran out: the `expiry` commands of the products that granted it. */
  async roleExpired(userId: number, roleId: number): Promise<void> {
    const purchase = await this.#store.lastPurchaseGranting(userId, roleId);
    const user = purchase && (await this.#users.findById(userId));
    if (purchase && user)
      await this.enqueue('expiry', { orderId: purchase.orderId, userId, username: user.username, linkedAccounts: user.linkedAccounts, items: purchase.items });
  }

  /**
   * A payment charged back (`payments.reversed`): every chargeback command queued for its player,
   * in the reversal's transaction, under the payment's order.
   */
  async chargeback(player: { userId: number; username: string; linkedAccounts: Record<string, string>; orderId: number }): Promise<void> {
    const commands = await chargebackCommands(this.#db);
    if (commands.length === 0) return;
    const at = now();
    const item = { productId: CHARGEBACK_PRODUCT, productName: '', quantity: 1, variables: {} };
    const rows = commands.map((c) => {
      const { text, refused } = renderOrRefuse(c.command, {
        username: player.username,
        userId: player.userId,
        orderId: player.orderId,
        chatUserId: player.linkedAccounts.chat ?? '',
        item,
        quantity: 1,
      });
      return {
        serverId: Number(c.serverID),
        userId: player.userId,
        username: player.username,
        orderId: player.orderId,
        productId: CHARGEBACK_PRODUCT,
        command: text,
        runOn: 'chargeback' as const,
        requireOnline: false,
        status: refused ? ('failed' as const) : ('waiting' as const),
        tries: 0,
        notBefore: null,
        lastError: refused ?? null,
        creationDate: at,
        updatedDate: at,
      };
    });
    await DeliveryQueue.insertMany(this.#db, rows);
    this.#db.afterCommit(() => this.#wakeups.wake(rows.map((r) => r.serverId)));
  }
}
