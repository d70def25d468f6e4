/** The delivery feature's contract: rows its admin API shows, and its service ref. */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { str, strOrNull } from '../../core/schemas.ts';

export const TRIGGERS = ['purchase', 'expiry', 'refund'] as const;
export type Trigger = (typeof TRIGGERS)[number];
export const QUEUE_STATUSES = ['waiting', 'claimed', 'done', 'failed', 'cancelled'] as const;

export const ServerRow = Type.Object({
  id: str(), name: str(), isActive: Type.Boolean(), lastSeenDate: strOrNull('last poll, claim or stream, site time'), creationDate: str(),
});
export type ServerRow = typeof ServerRow.static;

export const CommandRow = Type.Object({
  id: str(), productID: str(), serverID: str(), command: str(), trigger: str('purchase | expiry | refund'),
  requireOnline: Type.Boolean(), perUnit: Type.Boolean(),
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
export interface HandedOut {
  command: string;
  username: string;
}

/** A row of the plugin's queue listing: every field a string. */
export interface PluginQueueRow {
  id: string;
  /** `sending` (never tried) or `error` (tried before, still to run). */
  status: 'sending' | 'error';
  retry: string;
  updatedAt: string;
}

/** A row handed to a claimer under a lease. */
export const ClaimedRow = Type.Object({
  id: str(), command: str(), username: str(), userID: str(), orderID: str(), productID: str(), trigger: str(),
  tries: str('failed tries before this one'), leaseUntil: str('ack before this (site time) or the row is handed out again'),
});
export type ClaimedRow = typeof ClaimedRow.static;

/** A queued command as the admin sees it. */
export const QueueRow = Type.Object({
  id: str(), serverID: str(), userID: str(), username: str(), orderID: str(), productID: str(), command: str(), trigger: str(),
  requireOnline: Type.Boolean(), status: str('waiting | claimed | done | failed | cancelled'), tries: str(),
  leaseUntil: strOrNull(), lastError: strOrNull(), creationDate: str(), updatedDate: str(),
});
export type QueueRow = typeof QueueRow.static;

export interface QueueFilter {
  serverId?: number;
  status?: string;
  userId?: number;
  orderId?: number;
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

  /** The plugin's HTTP mode: the rows it may ask for. Throws DELIVERY_SERVER_NOT_FOUND. */
  pluginQueue(token: string): Promise<PluginQueueRow[]>;
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
