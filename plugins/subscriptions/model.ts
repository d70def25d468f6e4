/** What the subscriptions service's parts share: period arithmetic, the wording of a plan's terms, rows as the API shows them. */
import { addSeconds, displayTimestamp, formatMoney, parseTimestamp, toTimestamp } from '../../core/format.ts';
import type { TableRecord } from '../../core/table.ts';
import type { IntervalUnit, PlanRow, SubscriptionRow } from './contract.ts';
import type { SubscriptionsPlan, SubscriptionsSubscription } from './entities.ts';

export type Plan = TableRecord<typeof SubscriptionsPlan>;
export type Subscription = TableRecord<typeof SubscriptionsSubscription>;

const DAY = 86_400;

/**
 * `count` intervals after `from`. Months and years keep the day of the month, or the month's last
 * day when it is shorter (31 January + 1 month = 28 or 29 February).
 */
export function addInterval(from: string, unit: IntervalUnit, count: number): string {
  if (unit === 'days') return addSeconds(from, count * DAY);
  if (unit === 'weeks') return addSeconds(from, count * 7 * DAY);
  const at = parseTimestamp(from);
  const months = unit === 'years' ? count * 12 : count;
  const month = at.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(at.getUTCFullYear(), month + 1, 0)).getUTCDate();
  const day = Math.min(at.getUTCDate(), lastDay);
  return toTimestamp(new Date(Date.UTC(at.getUTCFullYear(), month, day, at.getUTCHours(), at.getUTCMinutes(), at.getUTCSeconds())));
}

/** When paid period `n` (n ≥ 1) of a subscription ends. */
export function periodEnd(s: Pick<Subscription, 'anchorDate' | 'intervalUnit' | 'intervalCount'>, n: number): string {
  return addInterval(s.anchorDate, s.intervalUnit, s.intervalCount * n);
}

/** "Renews every month at 4.99 USD", "every 3 weeks": what the storefront and the account page say. */
export function renewsText(terms: { intervalUnit: IntervalUnit; intervalCount: number; price: number }, currency: string): string {
  const unit = terms.intervalUnit.slice(0, -1);
  const every = terms.intervalCount === 1 ? unit : `${terms.intervalCount} ${terms.intervalUnit}`;
  return `Renews every ${every} at ${formatMoney(terms.price)} ${currency}`;
}

export function planRow(plan: Plan, productName: string, currency: string): PlanRow {
  return {
    id: String(plan.id),
    productID: String(plan.productId),
    productName,
    intervalUnit: plan.intervalUnit,
    intervalCount: String(plan.intervalCount),
    price: formatMoney(plan.price),
    trialDays: String(plan.trialDays),
    roleID: String(plan.roleId),
    roleDays: String(plan.roleDays),
    renewWith: plan.renewWith,
    isActive: plan.isActive ? '1' : '0',
    group: plan.groupName,
    renews: renewsText(plan, currency),
  };
}

export function subscriptionRow(s: Subscription, names: { username: string; productName: string; nextPrice?: number }, timezone: string): SubscriptionRow {
  const renews = s.status !== 'ended' && !s.cancelAtPeriodEnd;
  const shown = (ts: string | null) => (ts === null ? null : displayTimestamp(ts, timezone));
  return {
    id: String(s.id),
    userID: String(s.userId),
    username: names.username,
    productID: String(s.productId),
    productName: names.productName,
    gateway: s.gateway,
    status: s.status,
    price: formatMoney(s.price),
    currency: s.currency,
    renews: renewsText(s, s.currency),
    period: String(s.periodNo),
    periodEnd: displayTimestamp(s.periodEnd, timezone),
    nextPaymentDate: renews ? displayTimestamp(s.periodEnd, timezone) : null,
    nextAmount: renews ? formatMoney(names.nextPrice ?? s.price) : null,
    nextPlanID: s.nextPlanId === null ? null : String(s.nextPlanId),
    graceUntil: shown(s.graceUntil),
    cancelAtPeriodEnd: s.cancelAtPeriodEnd ? '1' : '0',
    startDate: displayTimestamp(s.startDate, timezone),
    endDate: shown(s.endDate),
    endReason: s.endReason,
  };
}
