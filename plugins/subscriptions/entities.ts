import { defineEntity, p } from '../../core/table.ts';
import type { GATEWAYS, INTERVAL_UNITS, PERIOD_STATES, RENEW_WITH, SUBSCRIPTION_STATES } from './contract.ts';

/** Times are UTC text `YYYY-MM-DD HH:MM:SS` (core/format.ts); money is integer cents. */

/** A store product sold as a subscription: one plan per product. */
export const SubscriptionsPlan = defineEntity({
  name: 'SubscriptionsPlan',
  tableName: 'subscriptions_plans',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** A store product; no foreign key across features. */
    productId: p.integer().unique(),
    intervalUnit: p.string().length(8).$type<(typeof INTERVAL_UNITS)[number]>(),
    intervalCount: p.integer(),
    price: p.integer(),
    /** Free days before the first charge, for a player who never subscribed to this product. */
    trialDays: p.integer(),
    /** The role held while the subscription runs; 0 for none. */
    roleId: p.integer(),
    /** 0: the role lasts as long as the subscription; else this many days from each payment. */
    roleDays: p.integer(),
    /** The product's commands a renewal queues: its `purchase` ones again, or its `renewal` ones. */
    renewWith: p.string().length(8).$type<(typeof RENEW_WITH)[number]>(),
    /** A plan off sale takes no new subscribers; the running ones go on. */
    isActive: p.boolean(),
    /** Plans of one group are tiers a running subscription can change between; null: none. */
    groupName: p.string().length(64).nullable(),
    creationDate: p.string().length(19),
  },
});

export const SubscriptionsSubscription = defineEntity({
  name: 'SubscriptionsSubscription',
  tableName: 'subscriptions_subscriptions',
  indexes: [{ properties: ['status', 'periodEnd'] }, { properties: ['productId', 'status'] }],
  uniques: [{ properties: ['gateway', 'gatewayRef'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer().index(),
    productId: p.integer(),
    planId: p.integer(),
    /** `<userId>:<productId>` while the subscription runs, null once it ended: one running subscription per player and product. */
    liveKey: p.string().length(32).nullable().unique(),
    gateway: p.string().length(16).$type<(typeof GATEWAYS)[number]>(),
    /** The gateway's id of the subscription (Stripe's `sub_…`); null for the wallet's. */
    gatewayRef: p.string().length(255).nullable(),
    /** The interval and price as subscribed: a plan changed later does not change a running subscription. */
    intervalUnit: p.string().length(8).$type<(typeof INTERVAL_UNITS)[number]>(),
    intervalCount: p.integer(),
    price: p.integer(),
    currency: p.string().length(3),
    status: p.string().length(16).$type<(typeof SUBSCRIPTION_STATES)[number]>(),
    /** The period now running: 0 is a free trial, 1 the first paid one. */
    periodNo: p.integer(),
    /** Period n (n ≥ 1) ends `n` intervals after this: no drift from short months. */
    anchorDate: p.string().length(19),
    periodStart: p.string().length(19),
    periodEnd: p.string().length(19),
    /** While past due: when the subscription ends unless a renewal is paid first. */
    graceUntil: p.string().length(19).nullable(),
    cancelAtPeriodEnd: p.boolean(),
    /** The last period whose renewal the player was reminded of (by mail): set once per period by a conditional update. */
    remindedPeriod: p.integer().default(0),
    /** A wallet subscription's change of tier: the plan its next period is paid on; set and cleared by conditional updates. */
    nextPlanId: p.integer().nullable(),
    startDate: p.string().length(19),
    endDate: p.string().length(19).nullable(),
    /** Why it ended: `cancelled`, `unpaid`, `staff`, `refunded`. */
    endReason: p.string().length(16).nullable(),
  },
});

/** Each period paid (or given free), once: the key (subscription, period) decides a racing renewal. */
export const SubscriptionsPeriod = defineEntity({
  name: 'SubscriptionsPeriod',
  tableName: 'subscriptions_periods',
  uniques: [{ properties: ['subscriptionId', 'periodNo'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    subscriptionId: p.integer(),
    periodNo: p.integer(),
    amount: p.integer(),
    periodStart: p.string().length(19),
    periodEnd: p.string().length(19),
    status: p.string().length(16).$type<(typeof PERIOD_STATES)[number]>(),
    paidDate: p.string().length(19),
  },
});

/** A checkout at a gateway for a subscription: its id is the reference the gateway carries back when it is paid. */
export const SubscriptionsCheckout = defineEntity({
  name: 'SubscriptionsCheckout',
  tableName: 'subscriptions_checkouts',
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    productId: p.integer(),
    planId: p.integer(),
    gateway: p.string().length(16).$type<(typeof GATEWAYS)[number]>(),
    checkoutRef: p.string().length(255).nullable(),
    /** Set once, by a conditional update, when the gateway says it was paid: a second start event finds it set. */
    subscriptionId: p.integer().nullable(),
    creationDate: p.string().length(19),
  },
});

/** Each gateway event acted on, once: the unique (gateway, event id) turns a redelivered or racing copy away. */
export const SubscriptionsGatewayEvent = defineEntity({
  name: 'SubscriptionsGatewayEvent',
  tableName: 'subscriptions_gateway_events',
  uniques: [{ properties: ['gateway', 'eventId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    gateway: p.string().length(16),
    eventId: p.string().length(255),
    subscriptionId: p.integer(),
    kind: p.string().length(32),
    creationDate: p.string().length(19),
  },
});

export const entities = [SubscriptionsPlan, SubscriptionsSubscription, SubscriptionsPeriod, SubscriptionsCheckout, SubscriptionsGatewayEvent];
