/**
 * The subscriptions service: a player subscribes paying from the wallet, the sweep renews each
 * period at its end (or starts the grace period when the balance is short, and ends the
 * subscription when the grace runs out), the player or staff cancel, staff refund. Every step that
 * must happen once is decided by a conditional update of the subscription's row (its period
 * number and state), backed by the unique (subscription, period) key of the periods paid.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { addSeconds, now, PERMANENT } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, fields, sql, where } from '../../core/sql.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { DeliveryService, Trigger } from '../delivery/contract.ts';
import type { EmailService, SubscriptionMailKind } from '../email/contract.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { StoreCatalogue } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type {
  GatewayCheckoutInput,
  PlanInput,
  PlanRow,
  SubscriptionEvent,
  SubscriptionFilter,
  SubscriptionMetrics,
  SubscriptionRow,
  SubscriptionState,
  SubscriptionsService,
} from './contract.ts';
import { SubscriptionsPeriod, SubscriptionsPlan, SubscriptionsSubscription } from './entities.ts';
import { type Plan, periodEnd, type Subscription, subscriptionRow } from './model.ts';
import { subscriptionMetrics } from './metrics.ts';
import { Plans } from './plans.ts';
import { Tiers } from './tiers.ts';

const S = SubscriptionsSubscription.c;
const PE = SubscriptionsPeriod.c;

export interface SubscriptionsDeps {
  db: Database;
  events: EventBus;
  settings: SettingsService;
  catalogue: StoreCatalogue;
  users: UsersService;
  credits: CreditsService;
  /** Looked up at use time: without the delivery feature no command is queued. */
  delivery: () => DeliveryService | undefined;
  audit: AuditLog;
  graceHours: number;
  /** Looked up at use time: without the payments feature no subscription is paid at a gateway. */
  payments: () => PaymentsService | undefined;
  /** Looked up at use time: without the email feature no mail is queued. */
  email: () => EmailService | undefined;
  /** Days before a wallet renewal its player is mailed; 0 for never. */
  reminderDays: number;
  log: FastifyBaseLogger;
}

export const event = (s: Subscription, period: number, amount: number): SubscriptionEvent => ({
  subscriptionId: s.id,
  userId: s.userId,
  productId: s.productId,
  period,
  amount,
});

export class DbSubscriptionsService implements SubscriptionsService {
  readonly #d: SubscriptionsDeps;
  /** For gateway.ts, which acts on a gateway's events with this service's steps. */
  readonly deps: SubscriptionsDeps;
  readonly #plans: Plans;
  readonly #tiers: Tiers;
  /** gateway.ts's checkout, handed over by index.ts (gateway.ts builds on this service, so it cannot be made here). */
  #checkout?: (input: GatewayCheckoutInput) => Promise<{ reference: string; checkoutURL: string }>;

  constructor(deps: SubscriptionsDeps) {
    this.deps = deps;
    this.#d = deps;
    this.#plans = new Plans(deps);
    this.#tiers = new Tiers(deps, this.#plans, this);
  }

  // ---- plans

  listPlans(): Promise<PlanRow[]> {
    return this.#plans.list();
  }
  getPlan(id: number): Promise<PlanRow> {
    return this.#plans.get(id);
  }
  planOfProduct(productId: number): Promise<PlanRow | undefined> {
    return this.#plans.ofProduct(productId);
  }
  /** Reads again which products have a plan on sale (planOfProduct answers the others without a statement). */
  refreshPlans(): Promise<void> {
    return this.#plans.refresh();
  }
  createPlan(input: PlanInput): Promise<PlanRow> {
    return this.#plans.create(input);
  }
  updatePlan(id: number, patch: Partial<Omit<PlanInput, 'productId'>>): Promise<PlanRow> {
    return this.#plans.update(id, patch);
  }

  // ---- paid at a gateway

  useGatewayCheckout(checkout: (input: GatewayCheckoutInput) => Promise<{ reference: string; checkoutURL: string }>): void {
    this.#checkout = checkout;
  }
  checkoutGateways(): ('stripe' | 'paypal')[] {
    const on = this.#d.payments()?.availableGateways() ?? [];
    return (['stripe', 'paypal'] as const).filter((g) => on.includes(g));
  }
  checkout(input: GatewayCheckoutInput): Promise<{ reference: string; checkoutURL: string }> {
    if (!this.#checkout) throw new DomainError('GATEWAY_UNAVAILABLE', 'Subscriptions are paid from the wallet only.');
    return this.#checkout(input);
  }

  // ---- reads

  async #rows(subs: Subscription[]): Promise<SubscriptionRow[]> {
    const [names, products, nextPrice] = await Promise.all([
      this.#d.users.usernames([...new Set(subs.map((s) => s.userId))]),
      this.#d.catalogue.productsById([...new Set(subs.map((s) => s.productId))], false),
      this.#tiers.nextPrices(subs),
    ]);
    const timezone = this.#d.settings.get().timezone;
    return subs.map((s) =>
      subscriptionRow(
        s,
        {
          username: names.get(s.userId) ?? '',
          productName: products.get(s.productId)?.name ?? '',
          nextPrice: s.nextPlanId === null ? undefined : nextPrice.get(s.nextPlanId),
        },
        timezone,
      ),
    );
  }

  async list(filter: SubscriptionFilter): Promise<SubscriptionRow[]> {
    const { userId, productId, status } = filter;
    const filters = where(
      userId !== undefined && sql`${S.userId} = ${userId}`,
      productId !== undefined && sql`${S.productId} = ${productId}`,
      status !== undefined && sql`${S.status} = ${status}`,
    );
    return this.#rows(await SubscriptionsSubscription.select(this.#d.db, sql`${filters} order by ${S.id} desc`));
  }

  async #find(id: number): Promise<Subscription> {
    const s = await SubscriptionsSubscription.find(this.#d.db, id);
    if (!s) throw new DomainError('SUBSCRIPTION_NOT_FOUND', `No subscription with ID ${id}.`);
    return s;
  }

  async get(id: number): Promise<SubscriptionRow> {
    return (await this.#rows([await this.#find(id)]))[0]!;
  }

  metrics(): Promise<SubscriptionMetrics> {
    return subscriptionMetrics(this.#d.db);
  }

  async countByState(): Promise<Record<SubscriptionState, number>> {
    const rows = await this.#d.db.query(sql`select ${fields({ status: S.status, n: count() })} from ${SubscriptionsSubscription} group by ${S.status}`);
    const counts: Record<SubscriptionState, number> = { active: 0, past_due: 0, ended: 0 };
    for (const r of rows) counts[r.status] = Number(r.n);
    return counts;
  }

  // ---- what a period gives: the role, the commands

  /**
   * The plan's role until `until` (the period's end and the grace after it, or the plan's own
   * days), never shortening a longer or permanent hold the player has from elsewhere.
   */
  async holdRole(s: Subscription, plan: Plan, paidAt: string): Promise<void> {
    if (plan.roleId === 0) return;
    const until = plan.roleDays > 0 ? addSeconds(paidAt, plan.roleDays * 86_400) : addSeconds(s.periodEnd, this.#d.graceHours * 3600);
    const held = (await this.#d.users.rolesOf(s.userId)).find((r) => r.id === plan.roleId);
    if (held && (held.expiryDate === PERMANENT || held.expiryDate >= until)) return;
    try {
      await this.#d.users.grantRole(s.userId, plan.roleId, until);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'FORBIDDEN') throw new DomainError('FORBIDDEN', `Product ${s.productId} is not for sale: ${err.message}`);
      throw err;
    }
  }

  async commands(trigger: Trigger, s: Subscription): Promise<void> {
    const delivery = this.#d.delivery();
    const user = delivery && (await this.#d.users.findById(s.userId));
    if (!delivery || !user) return;
    const productName = (await this.#d.catalogue.productName(s.productId)) ?? '';
    await delivery.enqueue(trigger, {
      orderId: 0,
      userId: s.userId,
      username: user.username,
      linkedAccounts: user.linkedAccounts,
      items: [{ productId: s.productId, productName, quantity: 1, variables: {} }],
    });
  }

  /** Too low a balance is INSUFFICIENT_BALANCE, as for a buy. */
  async #debit(s: Pick<Subscription, 'userId' | 'price'>, keyName?: string): Promise<void> {
    if (s.price === 0) return;
    try {
      await this.#d.credits.change(s.userId, -s.price, { reason: 'subscription', keyName });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'NOT_ENOUGH_CREDITS') throw new DomainError('INSUFFICIENT_BALANCE', err.message);
      throw err;
    }
  }

  // ---- subscribe

  async subscribe(userId: number, productId: number, keyName?: string): Promise<SubscriptionRow> {
    const id = await this.#d.db.transaction(async () => {
      const plan = await this.#plans.onSale(productId);
      await this.#d.users.requireById(userId);
      if (!(await this.#d.catalogue.productsById([productId], true)).has(productId))
        throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${productId}.`);
      // A trial is for a first subscription: a lapsed one started again pays from the start.
      const trial = plan.trialDays > 0 && !(await this.hasSubscribed(userId, productId));
      const s = await this.open(plan, userId, { gateway: 'credits', gatewayRef: null, trial, price: plan.price }, (s) =>
        trial ? Promise.resolve() : this.#debit(s, keyName),
      );
      return s.id;
    });
    return this.get(id);
  }

  /** Whether the player ever subscribed to the product (a trial is for a first subscription only). */
  async hasSubscribed(userId: number, productId: number): Promise<boolean> {
    const [before] = await SubscriptionsSubscription.select(this.#d.db, sql`where ${S.userId} = ${userId} and ${S.productId} = ${productId} limit 1`);
    return before !== undefined;
  }

  /**
   * A running subscription's row, its first period (paid, or the trial), the role and the purchase
   * commands, and `started`; `pay` takes the money first, if it is ours to take. SUBSCRIPTION_EXISTS when one runs already.
   */
  async open(
    plan: Plan,
    userId: number,
    how: { gateway: Subscription['gateway']; gatewayRef: string | null; trial: boolean; price: number },
    pay?: (s: Subscription) => Promise<void>,
  ): Promise<Subscription> {
    const at = now();
    const anchor = how.trial ? addSeconds(at, plan.trialDays * 86_400) : at;
    const terms = { anchorDate: anchor, intervalUnit: plan.intervalUnit, intervalCount: plan.intervalCount };
    const fields = {
      userId,
      productId: plan.productId,
      planId: plan.id,
      liveKey: `${userId}:${plan.productId}`,
      gateway: how.gateway,
      gatewayRef: how.gatewayRef,
      ...terms,
      price: how.price,
      currency: this.#d.settings.get().currency,
      status: 'active' as const,
      periodNo: how.trial ? 0 : 1,
      periodStart: at,
      periodEnd: how.trial ? anchor : periodEnd(terms, 1),
      graceUntil: null,
      cancelAtPeriodEnd: false,
      remindedPeriod: 0,
      nextPlanId: null,
      startDate: at,
      endDate: null,
      endReason: null,
    };
    let id: number;
    try {
      id = await SubscriptionsSubscription.insert(this.#d.db, fields);
    } catch (err) {
      if (isUniqueViolation(err))
        throw new DomainError('SUBSCRIPTION_EXISTS', `User ${userId} already has a running subscription to product ${plan.productId}.`);
      throw err;
    }
    const s: Subscription = { id, ...fields };
    const amount = how.trial ? 0 : how.price;
    await SubscriptionsPeriod.insert(this.#d.db, {
      subscriptionId: id,
      periodNo: s.periodNo,
      amount,
      periodStart: s.periodStart,
      periodEnd: s.periodEnd,
      status: how.trial ? 'trial' : 'paid',
      paidDate: at,
    });
    await pay?.(s);
    await this.holdRole(s, plan, at);
    await this.commands('purchase', s);
    await this.#d.events.emit('subscriptions.started', event(s, s.periodNo, amount));
    return s;
  }

  /** The player's mail of a renewal, in the caller's transaction. */
  async mail(kind: SubscriptionMailKind, s: Subscription, amount: number, date: string): Promise<void> {
    const email = this.#d.email();
    if (!email) return;
    const productName = (await this.#d.catalogue.productName(s.productId)) ?? '';
    await email.queueSubscriptionMail(kind, s.userId, { productName, amount, currency: s.currency, date });
  }

  async remind(): Promise<number> {
    if (this.#d.reminderDays === 0 || !this.#d.email()) return 0;
    const at = now();
    const soon = await SubscriptionsSubscription.select(
      this.#d.db,
      sql`where ${S.status} = 'active' and ${S.gateway} = 'credits' and ${S.cancelAtPeriodEnd} = ${false} and ${S.periodEnd} > ${at}
        and ${S.periodEnd} <= ${addSeconds(at, this.#d.reminderDays * 86_400)} and ${S.remindedPeriod} <= ${S.periodNo}`,
    );
    let reminded = 0;
    for (const s of soon) {
      const told = await this.#d.db.transaction(async () => {
        // remindedPeriod names the period renewed into: a second sweep, here or on another instance, changes no row.
        const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsSubscription} set ${S.remindedPeriod} = ${s.periodNo + 1}
          where ${S.id} = ${s.id} and ${S.periodNo} = ${s.periodNo} and ${S.remindedPeriod} <= ${s.periodNo}`);
        if (affectedRows > 0) await this.mail('subscription-reminder', s, s.price, s.periodEnd);
        return affectedRows > 0;
      });
      if (told) reminded++;
    }
    return reminded;
  }

  // ---- the sweep

  async sweep(): Promise<{ renewed: number; failed: number; ended: number }> {
    const at = now();
    const due = await SubscriptionsSubscription.select(
      this.#d.db,
      sql`where ${S.status} in ('active', 'past_due') and ${S.cancelAtPeriodEnd} = ${false} and ${S.periodEnd} <= ${at} and ${S.gateway} = 'credits' order by ${S.periodEnd}`,
    );
    let renewed = 0;
    let failed = 0;
    for (const s of due) {
      const outcome = await this.#renew(s);
      if (outcome === 'renewed') renewed++;
      else if (outcome === 'failed') failed++;
    }
    const ending = await SubscriptionsSubscription.select(
      this.#d.db,
      // A gateway's unpaid subscription ends by its webhook (the gateway retries a failed charge by its own rules); its role lapses with the grace.
      sql`where (${S.gateway} = 'credits' and ${S.status} = 'past_due' and ${S.graceUntil} <= ${at})
        or (${S.status} = 'active' and ${S.cancelAtPeriodEnd} = ${true} and ${S.periodEnd} <= ${at})`,
    );
    let ended = 0;
    for (const s of ending) if (await this.end(s, s.status === 'past_due' && !s.cancelAtPeriodEnd ? 'unpaid' : 'cancelled')) ended++;
    return { renewed, failed, ended };
  }

  /**
   * Period n → n + 1, paid from the balance. The conditional update on (id, period n) is the one
   * decision: a second sweep, on this instance or another, changes no row and does nothing.
   */
  async #renew(due: Subscription): Promise<'renewed' | 'failed' | 'skipped'> {
    // A change of tier takes effect here: the period is paid on the new plan's terms.
    const { s, from } = await this.#tiers.renewal(due);
    const next = s.periodNo + 1;
    // A short balance is seen without a write; the debit below still decides under the wallet's lock.
    if ((await this.#d.credits.balance(s.userId)) < s.price) return (await this.failed(due)) ? 'failed' : 'skipped';
    try {
      return await this.#d.db.transaction(async () => {
        const start = s.periodEnd;
        const end = periodEnd(s, next);
        const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsSubscription}
          set ${S.periodNo} = ${next}, ${S.periodStart} = ${start}, ${S.periodEnd} = ${end}, ${S.status} = 'active', ${S.graceUntil} = ${null},
            ${S.productId} = ${s.productId}, ${S.planId} = ${s.planId}, ${S.price} = ${s.price}, ${S.liveKey} = ${s.liveKey}, ${S.nextPlanId} = ${null}
          where ${S.id} = ${s.id} and ${S.periodNo} = ${s.periodNo} and ${S.status} in ('active', 'past_due') and ${S.cancelAtPeriodEnd} = ${false}
            and ${s.nextPlanId === null ? sql`${S.nextPlanId} is null` : sql`${S.nextPlanId} = ${s.nextPlanId}`}`);
        if (affectedRows === 0) return 'skipped';
        const at = now();
        await SubscriptionsPeriod.insert(this.#d.db, {
          subscriptionId: s.id,
          periodNo: next,
          amount: s.price,
          periodStart: start,
          periodEnd: end,
          status: 'paid',
          paidDate: at,
        });
        await this.#debit(s);
        const renewed = { ...s, periodNo: next, periodStart: start, periodEnd: end };
        const plan = await SubscriptionsPlan.find(this.#d.db, s.planId);
        if (from) {
          await this.#tiers.leave(due, from, plan);
          await this.commands('expiry', due);
        }
        if (plan) await this.holdRole(renewed, plan, at);
        await this.commands(!from && plan?.renewWith === 'renewal' ? 'renewal' : 'purchase', renewed);
        await this.#d.events.emit('subscriptions.renewed', event(s, next, s.price));
        await this.mail('subscription-receipt', s, s.price, end);
        return 'renewed' as const;
      });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'INSUFFICIENT_BALANCE') return (await this.failed(s)) ? 'failed' : 'skipped';
      throw err;
    }
  }

  /**
   * The first failed renewal of a period starts its grace period, once; later tries in the grace
   * change nothing. The grace counts from the failure, so a sweep that ran late still gives all of
   * it, and the role is held to its end.
   */
  async failed(s: Subscription): Promise<boolean> {
    const at = now();
    const graceUntil = addSeconds(at, this.#d.graceHours * 3600);
    return this.#d.db.transaction(async () => {
      const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsSubscription} set ${S.status} = 'past_due', ${S.graceUntil} = ${graceUntil}
        where ${S.id} = ${s.id} and ${S.periodNo} = ${s.periodNo} and ${S.status} = 'active'`);
      if (affectedRows === 0) return false;
      const plan = await SubscriptionsPlan.find(this.#d.db, s.planId);
      if (plan && plan.roleDays === 0) await this.holdRole({ ...s, periodEnd: at }, plan, at);
      await this.#d.events.emit('subscriptions.payment_failed', { ...event(s, s.periodNo + 1, s.price), graceUntil });
      await this.mail('subscription-failed', s, s.price, graceUntil);
      return true;
    });
  }

  /** Ends a running subscription once: the expiry commands queued, the role taken back. */
  async end(s: Subscription, reason: string): Promise<boolean> {
    return this.#d.db.transaction(async () => {
      const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsSubscription}
        set ${S.status} = 'ended', ${S.liveKey} = ${null}, ${S.endDate} = ${now()}, ${S.endReason} = ${reason}, ${S.graceUntil} = ${null}
        where ${S.id} = ${s.id} and ${S.status} <> 'ended'`);
      if (affectedRows === 0) return false;
      const plan = await SubscriptionsPlan.find(this.#d.db, s.planId);
      if (plan && plan.roleId > 0) await this.#d.users.revokeRole(s.userId, plan.roleId);
      await this.commands('expiry', s);
      await this.#d.events.emit('subscriptions.ended', { ...event(s, s.periodNo, 0), reason });
      return true;
    });
  }

  // ---- cancel, refund

  async cancel(id: number, by: { userId: number } | 'staff', when: 'period_end' | 'now'): Promise<SubscriptionRow> {
    const s = await this.#find(id);
    if (by !== 'staff' && by.userId !== s.userId) throw new DomainError('SUBSCRIPTION_NOT_FOUND', `No subscription with ID ${id} for user ${by.userId}.`);
    if (s.status === 'ended') throw new DomainError('SUBSCRIPTION_ENDED', `Subscription ${id} has already ended.`);
    const who = by === 'staff' ? 'staff' : 'player';
    if (s.gatewayRef !== null) await this.#gatewayCancel(s, when === 'period_end');
    await this.#d.db.transaction(async () => {
      const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsSubscription} set ${S.cancelAtPeriodEnd} = ${true}
        where ${S.id} = ${id} and ${S.status} <> 'ended' and ${S.cancelAtPeriodEnd} = ${false}`);
      if (affectedRows > 0) await this.#d.events.emit('subscriptions.cancelled', { ...event(s, s.periodNo, 0), by: who, atPeriodEnd: when === 'period_end' });
      if (when === 'now') await this.end(s, who === 'staff' ? 'staff' : 'cancelled');
      if (who === 'staff')
        await this.#d.audit.record({ action: 'subscriptions.cancel', target: { type: 'subscription', id }, summary: `Subscription ${id} cancelled (${when})` });
    });
    return this.get(id);
  }

  async changePlan(id: number, by: { userId: number } | 'staff', planId: number): Promise<SubscriptionRow> {
    await this.#tiers.request(await this.#find(id), by, planId);
    return this.get(id);
  }

  /** The gateway stops charging first: a refusal (GATEWAY_ERROR) leaves the subscription as it was. */
  async #gatewayCancel(s: Subscription, atPeriodEnd: boolean): Promise<void> {
    const payments = this.#d.payments();
    if (!payments) throw new DomainError('GATEWAY_UNAVAILABLE', `Subscription ${s.id} is paid at ${s.gateway}, and the payments feature is off.`);
    await payments.cancelSubscription(s.gateway, { subscriptionRef: s.gatewayRef!, atPeriodEnd });
  }

  async refund(id: number, keyName?: string): Promise<SubscriptionRow> {
    const s = await this.#find(id);
    if (s.gatewayRef !== null)
      throw new DomainError('SUBSCRIPTION_NOT_REFUNDABLE', `Subscription ${id} was paid at ${s.gateway}: refund it there, then cancel it here.`);
    const done = await this.#d.db.transaction(async () => {
      const { affectedRows } = await this.#d.db.run(sql`update ${SubscriptionsPeriod} set ${PE.status} = 'refunded'
        where ${PE.subscriptionId} = ${id} and ${PE.periodNo} = ${s.periodNo} and ${PE.status} = 'paid'`);
      const [period] =
        affectedRows > 0 ? await SubscriptionsPeriod.select(this.#d.db, sql`where ${PE.subscriptionId} = ${id} and ${PE.periodNo} = ${s.periodNo}`) : [];
      if (period && period.amount > 0) await this.#d.credits.change(s.userId, period.amount, { reason: 'subscription refund', keyName });
      const ended = await this.end(s, 'refunded');
      if (affectedRows > 0 || ended)
        await this.#d.audit.record({ action: 'subscriptions.refund', target: { type: 'subscription', id }, summary: `Subscription ${id} refunded and ended` });
      return affectedRows > 0 || ended;
    });
    if (!done) throw new DomainError('SUBSCRIPTION_NOT_REFUNDABLE', `Subscription ${id} has ended and its last period was not paid or is refunded already.`);
    return this.get(id);
  }
}
