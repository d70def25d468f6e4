/**
 * Changing tier: a running wallet subscription moves to another plan of its plan's group from its
 * next period. The request is a conditional update of the subscription's `next_plan_id`; the switch
 * is made by the renewal's own conditional update (which names the pending plan it read), so a
 * change made or dropped while a renewal runs is taken by that renewal or the next, never half.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { DomainError } from '../../core/errors.ts';
import { sql } from '../../core/sql.ts';
import { SubscriptionsPlan, SubscriptionsSubscription } from './entities.ts';
import type { Plan, Subscription } from './model.ts';
import type { Plans } from './plans.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { UsersService } from '../users/contract.ts';

const S = SubscriptionsSubscription.c;

/** What a renewal is paid on: the subscription's own plan, or the tier it changes to (`from` then the plan it leaves). */
export interface RenewalTerms {
  s: Subscription;
  from?: Plan;
}

export interface TierDeps {
  db: Database;
  payments: () => PaymentsService | undefined;
  users: UsersService;
  audit: AuditLog;
  log: FastifyBaseLogger;
}

/** The service's steps a switch at once takes (service.ts builds on this file, so they are handed in). */
export interface TierSteps {
  holdRole(s: Subscription, plan: Plan, paidAt: string): Promise<void>;
  commands(trigger: 'purchase' | 'expiry', s: Subscription): Promise<void>;
}

export class Tiers {
  readonly #d: TierDeps;
  readonly #plans: Plans;
  readonly #steps: TierSteps;

  constructor(deps: TierDeps, plans: Plans, steps: TierSteps) {
    this.#d = deps;
    this.#plans = plans;
    this.#steps = steps;
  }

  /** Records (or, with the subscription's own plan, drops) the change; its refusals are the contract's changePlan ones. */
  async request(s: Subscription, by: { userId: number } | 'staff', planId: number): Promise<void> {
    if (by !== 'staff' && by.userId !== s.userId) throw new DomainError('SUBSCRIPTION_NOT_FOUND', `No subscription with ID ${s.id} for user ${by.userId}.`);
    await this.#request(s, planId);
    if (by === 'staff')
      await this.#d.audit.record({
        action: 'subscriptions.change',
        target: { type: 'subscription', id: s.id },
        summary: `Subscription ${s.id} changes to plan ${planId}`,
      });
  }

  async #request(s: Subscription, planId: number): Promise<void> {
    const { db } = this.#d;
    if (s.status === 'ended') throw new DomainError('SUBSCRIPTION_ENDED', `Subscription ${s.id} has ended.`);
    if (s.cancelAtPeriodEnd) throw new DomainError('SUBSCRIPTION_ENDED', `Subscription ${s.id} is cancelled: it ends at its period's end.`);
    if (s.gateway !== 'credits' && s.gateway !== 'stripe')
      throw new DomainError('GATEWAY_UNAVAILABLE', `Subscription ${s.id} is paid at ${s.gateway}: cancel it and subscribe to the other plan.`);
    const target = await this.#plans.find(planId);
    if (target.id === s.planId) {
      await db.run(sql`update ${SubscriptionsSubscription} set ${S.nextPlanId} = ${null} where ${S.id} = ${s.id} and ${S.nextPlanId} is not null`);
      return;
    }
    if (!target.isActive) throw new DomainError('SUBSCRIPTION_PLAN_NOT_FOUND', `Plan ${planId} is not on sale.`);
    const current = await SubscriptionsPlan.find(db, s.planId);
    if (!current?.groupName || current.groupName !== target.groupName)
      throw new DomainError('SUBSCRIPTION_PLAN_NOT_IN_GROUP', `Plan ${planId} is not a tier of subscription ${s.id}'s group.`);
    if (current.intervalUnit !== target.intervalUnit || current.intervalCount !== target.intervalCount)
      throw new DomainError('SUBSCRIPTION_PLAN_NOT_IN_GROUP', `Plan ${planId} renews at another interval than subscription ${s.id}.`);
    await this.#freeFor(s, target);
    if (s.gateway === 'stripe') return this.#atStripe(s, current, target);
    const { affectedRows } = await db.run(sql`update ${SubscriptionsSubscription} set ${S.nextPlanId} = ${target.id}
      where ${S.id} = ${s.id} and ${S.status} in ('active', 'past_due') and ${S.cancelAtPeriodEnd} = ${false}
        and (${S.nextPlanId} is null or ${S.nextPlanId} <> ${target.id})`);
    if (affectedRows > 0) return;
    const [now] = await SubscriptionsSubscription.select(db, sql`where ${S.id} = ${s.id}`);
    // The same change asked twice is done once; otherwise the subscription ended or was cancelled meanwhile.
    if (now?.nextPlanId !== target.id) throw new DomainError('SUBSCRIPTION_ENDED', `Subscription ${s.id} has ended or is cancelled.`);
  }

  /** The tier left at a change: its role taken back, unless the new tier gives it too (its expiry commands are the caller's). */
  async leave(old: Subscription, from: Plan, to: Plan | undefined): Promise<void> {
    if (from.roleId > 0 && from.roleId !== to?.roleId) await this.#d.users.revokeRole(old.userId, from.roleId);
  }

  /**
   * Stripe moves the subscription to the new price now and prorates the rest of the period; here it
   * becomes the new tier at once, by a conditional update from the plan it was on (a second request finds it moved).
   */
  async #atStripe(s: Subscription, from: Plan, to: Plan): Promise<void> {
    const payments = this.#d.payments();
    if (!payments) throw new DomainError('GATEWAY_UNAVAILABLE', `Subscription ${s.id} is paid at stripe, and the payments feature is off.`);
    const unit = to.intervalUnit.slice(0, -1) as 'day' | 'week' | 'month' | 'year';
    await payments.changeSubscription('stripe', {
      subscriptionRef: s.gatewayRef!,
      amount: to.price,
      currency: s.currency,
      interval: { unit, count: to.intervalCount },
    });
    const { db } = this.#d;
    const moved = { ...s, productId: to.productId, planId: to.id, price: to.price, liveKey: `${s.userId}:${to.productId}` };
    await db.transaction(async () => {
      const { affectedRows } = await db.run(sql`update ${SubscriptionsSubscription}
        set ${S.productId} = ${moved.productId}, ${S.planId} = ${moved.planId}, ${S.price} = ${moved.price}, ${S.liveKey} = ${moved.liveKey}
        where ${S.id} = ${s.id} and ${S.planId} = ${s.planId} and ${S.status} in ('active', 'past_due') and ${S.cancelAtPeriodEnd} = ${false}`);
      if (affectedRows === 0) return;
      await this.leave(s, from, to);
      await this.#steps.commands('expiry', s);
      await this.#steps.holdRole(moved, to, now());
      await this.#steps.commands('purchase', moved);
    });
  }

  /** One running subscription per player and product: the tier's product must not run already. */
  async #freeFor(s: Subscription, target: Plan): Promise<void> {
    const [running] = await SubscriptionsSubscription.select(this.#d.db, sql`where ${S.liveKey} = ${`${s.userId}:${target.productId}`}`);
    if (running) throw new DomainError('SUBSCRIPTION_EXISTS', `User ${s.userId} already has a running subscription to product ${target.productId}.`);
  }

  /** The price of each pending tier, by plan: a subscription's next amount. */
  async nextPrices(subs: Subscription[]): Promise<Map<number, number>> {
    const pending = [...new Set(subs.flatMap((s) => (s.nextPlanId === null ? [] : [s.nextPlanId])))];
    const plans = await Promise.all(pending.map((id) => SubscriptionsPlan.find(this.#d.db, id)));
    return new Map(plans.flatMap((p) => (p ? [[p.id, p.price] as const] : [])));
  }

  /**
   * The terms of the renewal about to be paid: the pending tier's product, plan and price, or the
   * subscription's own when there is none or the tier can no longer be had (off sale, or its
   * product subscribed to since), which drops it.
   */
  async renewal(s: Subscription): Promise<RenewalTerms> {
    if (s.nextPlanId === null) return { s };
    const { db } = this.#d;
    const [target, from] = await Promise.all([SubscriptionsPlan.find(db, s.nextPlanId), SubscriptionsPlan.find(db, s.planId)]);
    const free = target?.isActive && !(await SubscriptionsSubscription.select(db, sql`where ${S.liveKey} = ${`${s.userId}:${target.productId}`}`)).length;
    if (!target || !free || !from) {
      await db.run(sql`update ${SubscriptionsSubscription} set ${S.nextPlanId} = ${null} where ${S.id} = ${s.id} and ${S.nextPlanId} = ${s.nextPlanId}`);
      this.#d.log.warn({ subscriptionId: s.id, planId: s.nextPlanId }, 'a change of tier was dropped: its plan is off sale or its product runs already');
      return { s: { ...s, nextPlanId: null } };
    }
    return { s: { ...s, productId: target.productId, planId: target.id, price: target.price, liveKey: `${s.userId}:${target.productId}` }, from };
  }
}
