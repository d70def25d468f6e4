/** The delivery feature's contract: rows its admin API shows, and its service ref. */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import type { JsonText } from '../../core/schema-compilers.ts';
import { EXAMPLE, dateStr, example, idStr, str, strOrNull, usernameStr } from '../../core/schemas.ts';
import type { OrderItemEvent } from '../store/contract.ts';

/** `renewal`: a subscription's period paid again (the subscriptions feature queues it). */
export const TRIGGERS = ['purchase', 'expiry', 'refund', 'renewal'] as const;
export type Trigger = (typeof TRIGGERS)[number];
/** What a command or queued row runs on: a product's trigger, or a chargeback (of no product). */
export type RunOn = Trigger | 'chargeback';
export const QUEUE_STATUSES = ['waiting', 'claimed', 'done', 'failed', 'cancelled'] as const;

export const ServerRow = Type.Object({
  id: str(undefined, '1'),
  name: example('Survival'),
  isActive: Type.Boolean(),
  lastSeenDate: strOrNull('last poll, claim or stream, site time', EXAMPLE.timestamp),
  creationDate: dateStr(),
});
export type ServerRow = typeof ServerRow.static;

export const CommandRow = Type.Object({
  id: idStr(),
  productID: str(undefined, '5'),
  serverID: str(undefined, '1'),
  command: example('lp user {username} parent add vip'),
  trigger: str('purchase | expiry | refund | renewal', 'purchase'),
  requireOnline: Type.Boolean(),
  perUnit: Type.Boolean(),
});
export type CommandRow = typeof CommandRow.static;

export interface CommandInput {
  serverID: number;
  command: string;
  trigger: Trigger;
  requireOnline: boolean;
  perUnit: boolean;
}

/** What a game server's plugin runs for one player, as the plugin's HTTP mode reads it. */
export const HandedOut = Type.Object({ command: example('lp user Steve parent add vip'), username: usernameStr() });
export type HandedOut = typeof HandedOut.static;

/** A row of the plugin's queue listing: every field a string. */
export const PluginQueueRow = Type.Object({
  id: idStr(),
  status: str('sending (never tried) or error (tried before)', 'sending'),
  retry: str('tries so far', '0'),
  updatedAt: dateStr(),
});
export type PluginQueueRow = typeof PluginQueueRow.static;

/** A row handed to a claimer under a lease. */
export const ClaimedRow = Type.Object({
  id: idStr(),
  command: example('lp user Steve parent add vip'),
  username: usernameStr(),
  userID: str(undefined, '7'),
  orderID: str(undefined, '310'),
  productID: str(undefined, '5'),
  trigger: str('purchase | expiry | refund | renewal', 'purchase'),
  tries: str('failed tries before this one', '0'),
  leaseUntil: str('ack before this (site time) or the row is handed out again', EXAMPLE.timestamp),
});
export type ClaimedRow = typeof ClaimedRow.static;

/** A queued command as the admin sees it. */
export const QueueRow = Type.Object({
  id: idStr(),
  serverID: str(undefined, '1'),
  userID: str(undefined, '7'),
  username: usernameStr(),
  orderID: str(undefined, '310'),
  productID: str(undefined, '5'),
  command: example('lp user Steve parent add vip'),
  trigger: str('purchase | expiry | refund | renewal', 'purchase'),
  requireOnline: Type.Boolean(),
  status: str('waiting | claimed | done | failed | cancelled', 'waiting'),
  tries: example('0'),
  leaseUntil: strOrNull('while claimed', null),
  lastError: strOrNull(undefined, null),
  creationDate: dateStr(),
  updatedDate: dateStr(),
});
export type QueueRow = typeof QueueRow.static;

export interface QueueFilter {
  serverId?: number;
  status?: string;
  userId?: number;
  orderId?: number;
  /** Rows of any of these orders (a player's page of orders, read at once). */
  orderIds?: number[];
  page: number;
  perPage: number;
}

export interface DeliveryService {
  listServers(): Promise<ServerRow[]>;
  getServer(id: number): Promise<ServerRow>;
  /** The token is in the answer only here and in rotateToken. */
  createServer(input: { name: string; isActive: boolean }): Promise<ServerRow & { token: string }>;
  updateServer(id: number, patch: { name?: string; isActive?: boolean }): Promise<ServerRow>;
  deleteServer(id: number): Promise<void>;
  rotateToken(id: number): Promise<ServerRow & { token: string }>;

  listCommands(productId: number): Promise<CommandRow[]>;
  createCommand(productId: number, input: CommandInput): Promise<CommandRow>;
  updateCommand(productId: number, commandId: number, patch: Partial<CommandInput>): Promise<CommandRow>;
  deleteCommand(productId: number, commandId: number): Promise<void>;

  /**
   * Queues the products' commands of `trigger` for a player, inside the caller's transaction (the
   * rows commit or roll back with it): a store order's, or a subscription's period (`orderId` 0).
   */
  enqueue(
    trigger: Trigger,
    order: { orderId: number; userId: number; username: string; linkedAccounts: Record<string, string>; items: OrderItemEvent[] },
  ): Promise<void>;

  /** Commands queued for the player on each chargeback (a payment refunded or disputed at its gateway), e.g. a ban. */
  chargebackCommands(): Promise<CommandRow[]>;
  /** Throws DELIVERY_SERVER_NOT_FOUND, or VALIDATION_ERROR for an unknown placeholder. */
  addChargebackCommand(serverId: number, command: string): Promise<CommandRow>;
  /** Throws DELIVERY_COMMAND_NOT_FOUND. */
  deleteChargebackCommand(id: number): Promise<void>;

  /** The plugin's HTTP mode: the rows it may ask for, as the JSON it reads. Throws DELIVERY_SERVER_NOT_FOUND. */
  pluginQueue(token: string): Promise<JsonText<PluginQueueRow[]>>;
  /** Hands out (and marks done) the still-waiting rows among `ids`, one player's per call. */
  validate(token: string, ids: number[]): Promise<HandedOut[]>;

  /** Claims up to `limit` waiting rows under a lease; `requireOnline` rows only for players in `online`. */
  claim(token: string, limit: number, online: string[]): Promise<ClaimedRow[]>;
  /** Settles claimed rows whose lease still holds; returns the ids it settled. */
  ack(token: string, ids: number[], result: 'done' | 'failed', message: string): Promise<string[]>;
  /** The server a token belongs to (seen now), for the stream. */
  serverOf(token: string): Promise<number>;

  listQueue(filter: QueueFilter): Promise<QueueRow[]>;
  /** A done, failed or cancelled row back to waiting, tries reset. Throws CONFLICT for a waiting or claimed one. */
  redeliver(id: number): Promise<QueueRow>;
  /** A waiting or claimed row cancelled. Throws CONFLICT otherwise. */
  cancel(id: number): Promise<QueueRow>;
}

export const deliveryRef = createServiceRef<DeliveryService>('delivery');

declare module '../../core/events.ts' {
  interface EventMap {
    /** Emitted inside the transaction that failed the command for good (a failed ack, or a lapsed lease, at maxTries). */
    'delivery.failed': { queueId: number; serverId: number; orderId: number; userId: number; username: string; command: string; error: string };
  }
}
