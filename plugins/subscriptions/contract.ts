/**
 * The subscriptions feature's contract: a store product sold as a subscription (a plan), the
 * subscriptions players hold, their rows as the API shows them, and the events they emit.
 */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { dateStr, example, idStr, moneyStr, str, strOrNull, usernameStr } from '../../core/schemas.ts';

export const INTERVAL_UNITS = ['days', 'weeks', 'months', 'years'] as const;
export type IntervalUnit = (typeof INTERVAL_UNITS)[number];
export const RENEW_WITH = ['purchase', 'renewal'] as const;
/** `credits`: renewed from the wallet by the sweep; the others charge at the gateway, whose webhooks renew. */
export const GATEWAYS = ['credits', 'stripe', 'paypal'] as const;
/** `active` (a trial too), `past_due` (a renewal failed: the grace period runs), `ended`. */
export const SUBSCRIPTION_STATES = ['active', 'past_due', 'ended'] as const;
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];
export const PERIOD_STATES = ['paid', 'trial', 'refunded'] as const;

export const PlanRow = Type.Object({
  id: idStr(),
  productID: str(undefined, '5'),
  productName: example('VIP'),
  intervalUnit: str('days | weeks | months | years', 'months'),
  intervalCount: str(undefined, '1'),
  price: moneyStr('per interval'),
  trialDays: str(undefined, '0'),
  roleID: str('0: none', '3'),
  roleDays: str('0: the role lasts as long as the subscription', '0'),
  renewWith: str("purchase (the product's purchase commands again) | renewal (its renewal commands)", 'purchase'),
  isActive: str('1 or 0', '1'),
  group: strOrNull('the tiers a running subscription can change between (plans of one group and interval)', 'ranks'),
  renews: example('Renews every month at 4.99 USD', 'what the storefront says'),
});
export type PlanRow = typeof PlanRow.static;

export interface PlanInput {
  productId: number;
  intervalUnit: IntervalUnit;
  intervalCount: number;
  price: number;
  trialDays: number;
  roleId: number;
  roleDays: number;
  renewWith: (typeof RENEW_WITH)[number];
  isActive: boolean;
  /** null or absent: the plan is in no group. */
  group?: string | null;
}

export const SubscriptionRow = Type.Object({
  id: idStr(),
  userID: str(undefined, '7'),
  username: usernameStr(),
  productID: str(undefined, '5'),
  productName: example('VIP'),
  gateway: str('credits', 'credits'),
  status: str('active | past_due | ended', 'active'),
  price: moneyStr('per interval'),
  currency: example('USD'),
  renews: example('Renews every month at 4.99 USD'),
  period: str('0 while on trial, then the paid period', '1'),
  periodEnd: dateStr(),
  nextPaymentDate: strOrNull('null when it will not renew (cancelled or ended)', '2026-12-28 12:00:00'),
  nextAmount: Type.Union([moneyStr(), Type.Null()], { description: 'null when it will not renew' }),
  nextPlanID: strOrNull('a change of tier: the plan the next period is paid on (its price is nextAmount)', null),
  graceUntil: strOrNull('while past due', null),
  cancelAtPeriodEnd: str('1 or 0', '0'),
  startDate: dateStr(),
  endDate: strOrNull(undefined, null),
  endReason: strOrNull('cancelled | unpaid | staff | refunded', null),
});
export type SubscriptionRow = typeof SubscriptionRow.static;

export interface SubscriptionFilter {
  userId?: number;
  productId?: number;
  status?: SubscriptionState;
}

/** A subscription whose periods the gateway charges: where the player is sent to pay the first. */
export interface GatewayCheckoutInput {
  userId: number;
  productId: number;
  gateway: 'stripe' | 'paypal';
  returnURL: string;
  cancelURL: string;
}

export interface SubscriptionMetrics {
  active: number;
  pastDue: number;
  /** Cents a month the running paid subscriptions that will renew bring, each price spread over a month. */
  mrr: number;
  /** Of the subscriptions running at the window's start, the share that ended within it (0 to 1). */
  churn: number;
  churned: number;
  windowDays: number;
}

export interface SubscriptionsService {
  listPlans(): Promise<PlanRow[]>;
  /** Throws SUBSCRIPTION_PLAN_NOT_FOUND. */
  getPlan(id: number): Promise<PlanRow>;
  /** The plan of a product on sale, if any (the storefront's product page). */
  planOfProduct(productId: number): Promise<PlanRow | undefined>;
  /** Throws PRODUCT_NOT_FOUND, ROLE_NOT_FOUND, CONFLICT (the product has a plan). */
  createPlan(input: PlanInput): Promise<PlanRow>;
  /** `isActive` false takes the plan off sale: running subscriptions go on. */
  updatePlan(id: number, patch: Partial<Omit<PlanInput, 'productId'>>): Promise<PlanRow>;

  /**
   * Starts a subscription paid from the wallet (or a free trial): the first period, the role, the
   * product's purchase commands, in one transaction. Throws SUBSCRIPTION_PLAN_NOT_FOUND,
   * SUBSCRIPTION_EXISTS, INSUFFICIENT_BALANCE.
   */
  subscribe(userId: number, productId: number, keyName?: string): Promise<SubscriptionRow>;
  /** The gateways a subscription can be paid at now: Stripe and PayPal when the payments feature has them configured. */
  checkoutGateways(): ('stripe' | 'paypal')[];
  /**
   * The gateway's checkout of the first period (the subscription starts on its webhook). Throws
   * SUBSCRIPTION_PLAN_NOT_FOUND, SUBSCRIPTION_EXISTS, GATEWAY_UNAVAILABLE, INVALID_URL, GATEWAY_ERROR.
   */
  checkout(input: GatewayCheckoutInput): Promise<{ reference: string; checkoutURL: string }>;
  list(filter: SubscriptionFilter): Promise<SubscriptionRow[]>;
  /** Throws SUBSCRIPTION_NOT_FOUND. */
  get(id: number): Promise<SubscriptionRow>;
  /** How many subscriptions are in each state (the console's dashboard). */
  countByState(): Promise<Record<SubscriptionState, number>>;
  /** The dashboard's figures: running and past due now, monthly recurring revenue, churn over the last 30 days. */
  metrics(): Promise<SubscriptionMetrics>;
  /**
   * The player's cancel (`by` their user ID: at the period's end) or staff's (`now` ends it at once:
   * the expiry commands run and the role ends). Throws SUBSCRIPTION_NOT_FOUND, SUBSCRIPTION_ENDED.
   */
  cancel(id: number, by: { userId: number } | 'staff', when: 'period_end' | 'now'): Promise<SubscriptionRow>;
  /**
   * Changes a running wallet subscription to another plan of its plan's group (and interval) from its
   * next period: the new price, role and commands from then on; its own plan again drops a pending change.
   * Throws SUBSCRIPTION_NOT_FOUND, SUBSCRIPTION_ENDED, SUBSCRIPTION_PLAN_NOT_FOUND, SUBSCRIPTION_PLAN_NOT_IN_GROUP,
   * SUBSCRIPTION_EXISTS, GATEWAY_UNAVAILABLE (paid at a gateway: cancel and subscribe to the other plan).
   */
  changePlan(id: number, by: { userId: number } | 'staff', planId: number): Promise<SubscriptionRow>;
  /** Staff: the current period's payment back to the wallet, and the subscription ended. Throws SUBSCRIPTION_NOT_REFUNDABLE. */
  refund(id: number, keyName?: string): Promise<SubscriptionRow>;
  /** Renewals due at the clock's now, failures and ends: each acted on once, whoever else sweeps. */
  sweep(): Promise<{ renewed: number; failed: number; ended: number }>;
  /** Mails each wallet subscription renewing within plugins.subscriptions.reminderDays, once per period; how many were told. */
  remind(): Promise<number>;
}

export const subscriptionsRef = createServiceRef<SubscriptionsService>('subscriptions');

/** What each event carries: the subscription and its player. */
export interface SubscriptionEvent {
  subscriptionId: number;
  userId: number;
  productId: number;
  period: number;
  /** Cents charged (started, renewed), or due (payment_failed). */
  amount: number;
}

declare module '../../core/events.ts' {
  interface EventMap {
    'subscriptions.started': SubscriptionEvent;
    'subscriptions.renewed': SubscriptionEvent;
    'subscriptions.payment_failed': SubscriptionEvent & { graceUntil: string };
    'subscriptions.cancelled': SubscriptionEvent & { by: 'player' | 'staff'; atPeriodEnd: boolean };
    'subscriptions.ended': SubscriptionEvent & { reason: string };
  }
}
