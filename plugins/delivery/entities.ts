import { defineEntity, p } from '../../core/table.ts';
import type { QUEUE_STATUSES, RunOn } from './contract.ts';

/** Times are UTC text `YYYY-MM-DD HH:MM:SS` (core/format.ts). */

export const DeliveryServer = defineEntity({
  name: 'DeliveryServer',
  tableName: 'delivery_servers',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(128),
    /** SHA-256 of the token, hex: the token itself is shown once and never stored. */
    tokenHash: p.string().length(64).unique(),
    isActive: p.boolean(),
    lastSeenDate: p.string().length(19).nullable(),
    creationDate: p.string().length(19),
  },
});

export const DeliveryCommand = defineEntity({
  name: 'DeliveryCommand',
  tableName: 'delivery_commands',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** A store product; no foreign key across features. 0 for a chargeback command, which belongs to no product. */
    productId: p.integer().index(),
    serverId: p.integer().index(),
    /** With its placeholders, rendered when queued. */
    command: p.text(),
    /** `purchase`, `expiry` or `refund`, or `chargeback` (product 0) (`trigger` is a reserved word in SQL). */
    runOn: p.string().length(16).$type<RunOn>(),
    requireOnline: p.boolean(),
    perUnit: p.boolean(),
  },
});

/** A game server's rows by status in id order, with what its poll answers: the poll reads this index alone. */
export const SERVER_QUEUE_INDEX = 'delivery_queue_server_queue_index';

/** Rows by status and lease, for the sweeps: never the poll's (under load MariaDB picked it for the poll now and then). */
export const STATUS_LEASE_INDEX = 'delivery_queue_status_lease_until_index';

export const DeliveryQueue = defineEntity({
  name: 'DeliveryQueue',
  tableName: 'delivery_queue',
  indexes: [
    { name: SERVER_QUEUE_INDEX, properties: ['serverId', 'status', 'id', 'requireOnline', 'notBefore', 'tries', 'updatedDate'] },
    { name: STATUS_LEASE_INDEX, properties: ['status', 'leaseUntil'] },
  ],
  properties: {
    id: p.integer().primary().autoincrement(),
    serverId: p.integer(),
    userId: p.integer().index(),
    /** As at the time of queueing: the player the game server runs the command for. */
    username: p.string().length(64),
    orderId: p.integer().index(),
    productId: p.integer(),
    command: p.text(),
    runOn: p.string().length(16).$type<RunOn>(),
    requireOnline: p.boolean(),
    status: p.string().length(16).$type<(typeof QUEUE_STATUSES)[number]>(),
    /** Failed tries: leases that ran out and `failed` acks. */
    tries: p.integer(),
    /** While `claimed`: when the claim lapses and the row goes back to waiting. */
    leaseUntil: p.string().length(19).nullable(),
    /** After a `failed` ack: the row is not handed out again until this time has passed. */
    notBefore: p.string().length(19).nullable(),
    lastError: p.text().nullable(),
    creationDate: p.string().length(19),
    updatedDate: p.string().length(19),
  },
});

export const entities = [DeliveryServer, DeliveryCommand, DeliveryQueue];
