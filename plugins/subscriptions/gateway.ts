/**
 * Subscriptions paid at a gateway (Stripe Billing): the checkout goes through the payments
 * feature's contract, and the gateway's verified webhook events come back through the hook this
 * feature registers there. Each event is acted on once: its id is recorded under a unique
 * (gateway, event id) key first, in the transaction that acts on it, so a redelivered or racing copy
 * finds it taken; the start is the unique (gateway, subscription) of the row it makes, a renewal the
 * conditional update of the subscription's period, backed by the unique (subscription, period).
 */
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now } from '../../core/format.ts';
import { raw, sql } from '../../core/sql.ts';
import type { SubscriptionEventResult, SubscriptionGatewayEvent } from '../payments/contract.ts';
import type { GatewayCheckoutInput } from './contract.ts';
import { SubscriptionsCheckout, SubscriptionsGatewayEvent, SubscriptionsPeriod, SubscriptionsPlan, SubscriptionsSubscription } from './entities.ts';
import { periodEnd, type Subscription } from './model.ts';
import { Plans } from './plans.ts';
import { type DbSubscriptionsService, event, type SubscriptionsDeps } from './service.ts';

const S = SubscriptionsSubscription.c;
const C = SubscriptionsCheckout.c;
const E = SubscriptionsGatewayEvent.c;

export class GatewaySubscriptions {
  readonly #d: SubscriptionsDeps;
  readonly #life: DbSubscriptionsService;
  readonly #plans: Plans;

  constructor(deps: SubscriptionsDeps, life: DbSubscriptionsService) {
    this.#d = deps;
    this.#life = life;
    this.#plans = new Plans(deps);
  }

  /** Where the player pays the first period; the subscription starts when the gateway says it was paid. */
  async checkout(input: GatewayCheckoutInput): Promise<{ reference: string; checkoutURL: string }> {
    const { db } = this.#d;
    const payments = this.#d.payments();
    if (!payments) throw new DomainError('GATEWAY_UNAVAILABLE', 'Subscriptions are paid from the wallet only: the payments feature is off.');
    const { userId, productId, gateway } = input;
    const plan = await this.#plans.onSale(productId);
    await this.#d.users.requireById(userId);
    const product = (await this.#d.catalogue.productsById([productId], true)).get(productId);
    if (!product) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${productId}.`);
    const [running] = await SubscriptionsSubscription.select(db, sql`where ${S.liveKey} = ${`${userId}:${productId}`}`);
    if (running) throw new DomainError('SUBSCRIPTION_EXISTS', `User ${userId} already has a running subscription to product ${productId}.`);
    const trial = plan.trialDays > 0 && !(await this.#life.hasSubscribed(userId, productId));
    const id = await SubscriptionsCheckout.insert(db, {
      userId,
      productId,
      planId: plan.id,
      gateway,
      checkoutRef: null,
      subscriptionId: null,
      creationDate: now(),
    });
    // The gateway's call is not held in a transaction; a refused one (a bad return address, the
    // gateway off or failing) takes its checkout row back, so a refusal changes nothing.
    const session = await payments
      .startSubscription(gateway, {
        reference: String(id),
        userId,
        amount: plan.price,
        currency: this.#d.settings.get().currency,
        description: product.name,
        interval: { unit: plan.intervalUnit.slice(0, -1) as 'day' | 'week' | 'month' | 'year', count: plan.intervalCount },
        trialDays: trial ? plan.trialDays : 0,
        returnURL: input.returnURL,
        cancelURL: input.cancelURL,
      })
      .catch(async (err: unknown) => {
        await db.run(sql`delete from ${SubscriptionsCheckout} where ${C.id} = ${id}`);
        throw err;
      });
    await SubscriptionsCheckout.update(db, id, { checkoutRef: session.checkoutRef });
    return { reference: String(id), checkoutURL: session.checkoutURL };
  }

  /** The payments feature's hook: one verified gateway event, acted on once. */
  handle(gateway: string, e: SubscriptionGatewayEvent): Promise<SubscriptionEventResult> {
    return this.#d.db.transaction(async () => {
      const s = e.kind === 'subscription-started' ? undefined : await this.#byRef(gateway, e.subscriptionRef);
      if (e.kind !== 'subscription-started' && !s) throw new DomainError('UNKNOWN_PAYMENT', `Event ${e.eventId} names no subscription of ${gateway}.`);
      try {
        await SubscriptionsGatewayEvent.insert(this.#d.db, { gateway, eventId: e.eventId, subscriptionId: s?.id ?? 0, kind: e.kind, creationDate: now() });
      } catch (err) {
        if (isUniqueViolation(err)) return 'duplicate';
        throw err;
      }
      if (e.kind === 'subscription-started') return this.#started(gateway, e);
      if (e.kind === 'subscription-paid') return this.#paid(s!, e);
      if (e.kind === 'subscription-failed') return (await this.#life.failed(s!)) ? 'payment_failed' : 'unchanged';
      // Cancelled at the period's end (PayPal cancels at once): what was paid runs on, and the sweep ends it then.
      if (s!.cancelAtPeriodEnd && s!.periodEnd > now()) return 'unchanged';
      return (await this.#life.end(s!, s!.status === 'past_due' ? 'unpaid' : 'cancelled')) ? 'ended' : 'unchanged';
    });
  }

  /** A locking read: on MariaDB a plain one could miss a row a racing transaction just committed. */
  async #byRef(gateway: string, ref: string): Promise<Subscription | undefined> {
    const { db } = this.#d;
    const [s] = await SubscriptionsSubscription.select(db, sql`where ${S.gateway} = ${gateway} and ${S.gatewayRef} = ${ref}${raw(db.forUpdate)}`);
    return s;
  }

  async #started(gateway: string, e: Extract<SubscriptionGatewayEvent, { kind: 'subscription-started' }>): Promise<SubscriptionEventResult> {
    const { db } = this.#d;
    const checkout = /^\d{1,10}$/.test(e.reference) ? await SubscriptionsCheckout.find(db, Number(e.reference)) : undefined;
    if (!checkout || checkout.gateway !== gateway) throw new DomainError('UNKNOWN_PAYMENT', `Event ${e.eventId} names no subscription checkout of ${gateway}.`);
    if (await this.#byRef(gateway, e.subscriptionRef)) return 'unchanged';
    const plan = await SubscriptionsPlan.find(db, checkout.planId);
    if (!plan) throw new DomainError('UNKNOWN_PAYMENT', `The plan of checkout ${checkout.id} is gone.`);
    let s: Subscription;
    try {
      s = await this.#life.open(plan, checkout.userId, {
        gateway: checkout.gateway,
        gatewayRef: e.subscriptionRef,
        trial: e.amount === 0,
        price: e.amount || plan.price,
      });
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'SUBSCRIPTION_EXISTS')) throw err;
      // Paid twice (two checkouts open at once): the second stops charging; its first payment is staff's to refund.
      this.#d.log.error(
        { gateway, subscriptionRef: e.subscriptionRef, userId: checkout.userId },
        'a second subscription to one product was paid: cancelled at the gateway',
      );
      await this.#d.payments()?.cancelSubscription(gateway, { subscriptionRef: e.subscriptionRef, atPeriodEnd: false });
      return 'unchanged';
    }
    await db.run(sql`update ${SubscriptionsCheckout} set ${C.subscriptionId} = ${s.id} where ${C.id} = ${checkout.id} and ${C.subscriptionId} is null`);
    await db.run(sql`update ${SubscriptionsGatewayEvent} set ${E.subscriptionId} = ${s.id} where ${E.gateway} = ${gateway} and ${E.eventId} = ${e.eventId}`);
    return 'started';
  }

  /** Period n → n + 1, as the gateway charged it; the conditional update on (id, period n) decides. */
  async #paid(s: Subscription, e: Extract<SubscriptionGatewayEvent, { kind: 'subscription-paid' }>): Promise<SubscriptionEventResult> {
    const { db } = this.#d;
    // A payment a day or more before the running period's end paid that period (PayPal's first sale follows the activation).
    if (e.paidAt && e.paidAt < addSeconds(s.periodEnd, -86_400)) return 'unchanged';
    const next = s.periodNo + 1;
    const start = s.periodEnd;
    const end = e.periodEnd && e.periodEnd > start ? e.periodEnd : periodEnd(s, next);
    const { affectedRows } = await db.run(sql`update ${SubscriptionsSubscription}
      set ${S.periodNo} = ${next}, ${S.periodStart} = ${start}, ${S.periodEnd} = ${end}, ${S.status} = 'active', ${S.graceUntil} = ${null}
      where ${S.id} = ${s.id} and ${S.periodNo} = ${s.periodNo} and ${S.status} in ('active', 'past_due')`);
    if (affectedRows === 0) return 'unchanged';
    const at = now();
    await SubscriptionsPeriod.insert(db, {
      subscriptionId: s.id,
      periodNo: next,
      amount: e.amount,
      periodStart: start,
      periodEnd: end,
      status: 'paid',
      paidDate: at,
    });
    const renewed = { ...s, periodNo: next, periodStart: start, periodEnd: end };
    const plan = await SubscriptionsPlan.find(db, s.planId);
    if (plan) await this.#life.holdRole(renewed, plan, at);
    await this.#life.commands(plan?.renewWith === 'renewal' ? 'renewal' : 'purchase', renewed);
    await this.#d.events.emit('subscriptions.renewed', event(s, next, e.amount));
    await this.#life.mail('subscription-receipt', s, e.amount, end);
    return 'renewed';
  }
}
