/** What the parts of the delivery service share: their rows, dependencies and the queue's "due now". */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import type { EventBus } from '../../core/events.ts';
import { now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { OrderItemEvent, StoreCatalogue, StoreOrders } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import { type DeliveryCommand, DeliveryQueue, type DeliveryServer } from './entities.ts';
import type { Wakeups } from './wakeups.ts';

export type Server = TableRecord<typeof DeliveryServer>;
export type Command = TableRecord<typeof DeliveryCommand>;
export type Queued = TableRecord<typeof DeliveryQueue>;

export interface LeaseOptions {
  leaseSeconds: number;
  maxTries: number;
  /** A `failed` ack's wait before the row goes out again: base × factor^(tries − 1), at most max. */
  retryBaseSeconds: number;
  retryFactor: number;
  retryMaxSeconds: number;
}

export interface DeliveryDeps {
  db: Database;
  events: EventBus;
  settings: SettingsService;
  store: StoreCatalogue & StoreOrders;
  users: UsersService;
  audit: AuditLog;
  wakeups: Wakeups;
  lease: LeaseOptions;
  watch: { silentMinutes: number; stuckMinutes: number };
}

/** What an order (bought, refunded, or a role of it expired) queues commands for. */
export interface OrderDelivery {
  orderId: number;
  userId: number;
  username: string;
  linkedAccounts: Record<string, string>;
  items: OrderItemEvent[];
}

/** The product id of chargeback commands: they belong to no product. */
export const CHARGEBACK_PRODUCT = 0;

const Q = DeliveryQueue.c;

/** Rows a claimer or the plugin may be handed now: waiting, and past any retry delay (`q`: the queue's columns under an alias). */
export const due = (q: typeof Q = Q) => sql`${q.status} = 'waiting' and (${q.notBefore} is null or ${q.notBefore} < ${now()})`;
