import { defineEntity, p, type TableRecord } from '../../core/table.ts';

/** Where events go: a signed webhook (Standard Webhooks) or a Discord channel's webhook URL. */
export const NotificationsEndpoint = defineEntity({
  name: 'NotificationsEndpoint',
  tableName: 'notifications_endpoints',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
    kind: p.string().length(16).$type<'webhook' | 'discord'>(),
    url: p.string().length(2048),
    /** `whsec_` and base64: the Standard Webhooks signing key, made here and shown to the owner. */
    secret: p.string().length(64),
    /** The subscribed event names, separated by spaces. */
    events: p.text(),
    active: p.boolean(),
    createdDate: p.string().length(19),
  },
});

/**
 * One event owed to endpoints; its `messageId` is the `webhook-id` every delivery of it carries
 * (128 random bits: unique without an index the emitting request would pay for). The request
 * writes only this row; the worker fans it out to its endpoints' deliveries and sets `fanned`.
 */
export const NotificationsEvent = defineEntity({
  name: 'NotificationsEvent',
  tableName: 'notifications_events',
  properties: {
    id: p.integer().primary().autoincrement(),
    messageId: p.string().length(40),
    name: p.string().length(100),
    payload: p.text(),
    createdDate: p.string().length(19),
    fanned: p.boolean(),
  },
  indexes: [{ properties: ['fanned', 'id'] }],
});

/** An event owed to one endpoint: the queue. `sending` rows carry a lease; a lapsed one is sent again. */
export const NotificationsDelivery = defineEntity({
  name: 'NotificationsDelivery',
  tableName: 'notifications_deliveries',
  properties: {
    id: p.integer().primary().autoincrement(),
    eventId: p.integer(),
    endpointId: p.integer(),
    status: p.string().length(16).$type<'pending' | 'sending' | 'delivered' | 'failed'>(),
    attempts: p.integer(),
    nextAttemptDate: p.string().length(19),
    leaseUntil: p.string().length(19).nullable(),
    /** A random token naming the look that claimed the row, so one statement claims a batch and one reads what it got. */
    claim: p.string().length(32).nullable(),
    lastStatus: p.integer().nullable(),
    updatedDate: p.string().length(19),
  },
  uniques: [{ properties: ['eventId', 'endpointId'] }],
  // The first serves each endpoint's rows due; the second the sweep of lapsed leases (only rows
  // being sent hold one). No index leads with the status: SQLite would pick it over the ids a
  // claim names and read every pending row.
  indexes: [{ properties: ['endpointId', 'status', 'nextAttemptDate'] }, { properties: ['leaseUntil'] }],
});

/** A new delivery of event `eventId` to one endpoint, due at `at`. */
export function pendingDelivery(eventId: number, endpointId: number, at: string): Omit<TableRecord<typeof NotificationsDelivery>, 'id'> {
  return { eventId, endpointId, status: 'pending', attempts: 0, nextAttemptDate: at, leaseUntil: null, claim: null, lastStatus: null, updatedDate: at };
}

/** Each try of a delivery: when, how long, and what the endpoint answered (the body cut short). */
export const NotificationsAttempt = defineEntity({
  name: 'NotificationsAttempt',
  tableName: 'notifications_attempts',
  properties: {
    id: p.integer().primary().autoincrement(),
    deliveryId: p.integer().index(),
    startedDate: p.string().length(19),
    durationMs: p.integer(),
    /** The HTTP status, or null when nothing came back (refused, timed out). */
    status: p.integer().nullable(),
    response: p.text(),
    error: p.string().length(500).nullable(),
  },
});

/** An owner's wording of a chat announcement for one event; events without one use the built-in. */
export const NotificationsTemplate = defineEntity({
  name: 'NotificationsTemplate',
  tableName: 'notifications_templates',
  properties: {
    id: p.integer().primary().autoincrement(),
    event: p.string().length(100).unique(),
    title: p.string().length(256),
    body: p.text(),
  },
});

export const entities = [NotificationsEndpoint, NotificationsEvent, NotificationsDelivery, NotificationsAttempt, NotificationsTemplate];
