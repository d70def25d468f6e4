/** What the dashboard shows of subscriptions: how many run, the monthly recurring revenue, the churn of the last 30 days. */
import type { Database } from '../../core/db.ts';
import { addSeconds, now } from '../../core/format.ts';
import { fields, sql } from '../../core/sql.ts';
import type { IntervalUnit, SubscriptionMetrics } from './contract.ts';
import { SubscriptionsSubscription } from './entities.ts';

const S = SubscriptionsSubscription.c;
const WINDOW_DAYS = 30;
/** Intervals of each unit in a month, on average (a year of 365 days: 52 weeks and a day). */
const PER_MONTH: Record<IntervalUnit, number> = { days: 365 / 12, weeks: 365 / 7 / 12, months: 1, years: 1 / 12 };

export async function subscriptionMetrics(db: Database): Promise<SubscriptionMetrics> {
  const at = now();
  const since = addSeconds(at, -WINDOW_DAYS * 86_400);
  // The running ones and those that ended in the window: no more rows than that.
  const rows = await db.query(
    sql`select ${fields({
      status: S.status,
      price: S.price,
      unit: S.intervalUnit,
      count: S.intervalCount,
      periodNo: S.periodNo,
      cancelAtPeriodEnd: S.cancelAtPeriodEnd,
      startDate: S.startDate,
      endDate: S.endDate,
    })} from ${SubscriptionsSubscription} where ${S.status} <> 'ended' or ${S.endDate} >= ${since}`,
  );
  let active = 0;
  let pastDue = 0;
  let mrr = 0;
  let atStart = 0;
  let churned = 0;
  for (const r of rows) {
    if (r.status === 'active') active++;
    if (r.status === 'past_due') pastDue++;
    // Revenue that recurs: paid periods (not a trial) that will renew (not cancelled, not past due).
    if (r.status === 'active' && !r.cancelAtPeriodEnd && r.periodNo > 0) mrr += (Number(r.price) * PER_MONTH[r.unit]) / Number(r.count);
    if (r.startDate < since) {
      atStart++;
      if (r.status === 'ended') churned++;
    }
  }
  return { active, pastDue, mrr: Math.round(mrr), churn: atStart === 0 ? 0 : churned / atStart, churned, windowDays: WINDOW_DAYS };
}
