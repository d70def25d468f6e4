/**
 * The console's dashboard by hand, for the rush (bench/rush.ts): `GET /console` on the staff
 * session's cookie (its token's hash in console_sessions, idle sessions ended, the last-seen time
 * written at most every 30 s, as the server's sessions do), the staff member's account and roles,
 * then every figure the server's dashboard shows, each distinct statement once: credits in
 * circulation, tickets, sales of today and this month and the 30-day chart (in the site's time
 * zone), the delivery queue's health, disputes, payments needing staff, subscriptions' MRR and
 * churn, and the database's write probe; rendered as a plain HTML page.
 */
import { createHash } from 'node:crypto';
import { addSeconds, displayTimestamp, now, parseClientTimestamp } from '../core/format.ts';
import type { BaseDb, Row } from './base-db.ts';
import type { BaselineRoute } from './scenario.ts';

/** As config/default.json's plugins.console and plugins.delivery. */
const ADMIN_ROLES = ['admin'];
const SUPPORT_ROLES = ['support'];
const IDLE_SECONDS = 30 * 60;
const TOUCH_SECONDS = 30;
const SILENT_MINUTES = 10;
const STUCK_MINUTES = 30;
const CHART_DAYS = 30;
const DISPUTE_DAYS = 90;
const CHURN_DAYS = 30;
const PER_MONTH: Record<string, number> = { days: 365 / 12, weeks: 365 / 7 / 12, months: 1, years: 1 / 12 };

const SESSION = 'select id, token_hash, user_id, csrf_token, ip, created_at, last_seen_at from console_sessions where token_hash = ?';
const ACCOUNT =
  'select a.id, a.username, a.username_key, a.email, a.email_key, a.is_verified, a.auth_status, a.creation_ip, a.creation_date, l.platform, ' +
  'l.external_id from users_accounts a left join users_linked_accounts l on l.user_id = a.id where a.id = ?';
const ROLES =
  'select r.id, r.name, r.slug, r.priority, r.chat_role_id, r.username_css, r.badge_css, ra.expiry_date from users_role_assignments ra ' +
  'join users_roles r on r.id = ra.role_id where ra.user_id = ? and (ra.expiry_date = ? or ra.expiry_date > ?) order by r.priority desc, r.id';
/** The day's, the month's and the chart's sales in one scan: by period (2 today, 1 this month, 0 before), UTC hour and type. */
const SALES =
  'select case when creation_date >= ? then 2 when creation_date >= ? then 1 else 0 end as period, substr(creation_date, 1, 13) as hour, type, ' +
  "count(*) as n, sum(total) as total from store_orders where status = 'completed' and test = 0 and creation_date >= ? group by period, hour, type";
const QUEUE_HEALTH =
  "select sum(case when status in ('waiting', 'claimed') then 1 else 0 end) as backlog, sum(case when status in ('waiting', 'claimed') and " +
  "updated_date < ? then 1 else 0 end) as stuck, sum(case when status = 'failed' then 1 else 0 end) as failed from delivery_queue " +
  "where status in ('waiting', 'claimed', 'failed')";
const SILENT_SERVERS = 'select count(*) as n from delivery_servers where is_active = 1 and (last_seen_date is null or last_seen_date < ?)';
const DISPUTES =
  "select sum(case when status = 'open' then 1 else 0 end) as open, sum(case when status = 'won' then 1 else 0 end) as won, sum(case when " +
  "status = 'lost' then 1 else 0 end) as lost from payments_disputes where creation_date >= ?";
const PAID_SINCE = "select count(*) as n from payments_payments where creation_date >= ? and status in ('completed', 'credited', 'refunded', 'disputed')";
const TROUBLE =
  "select sum(case when status = 'disputed' then 1 else 0 end) as disputed, sum(case when status = 'refund-due' then 1 else 0 end) as " +
  "refund_due, sum(case when debt > 0 then 1 else 0 end) as debtors, sum(debt) as debt from payments_payments where status in ('disputed', " +
  "'refund-due') or debt > 0";
const SUBSCRIPTIONS =
  'select status, price, interval_unit, interval_count, period_no, cancel_at_period_end, start_date, end_date from subscriptions_subscriptions ' +
  "where status <> 'ended' or end_date >= ?";

/** The site settings the page needs, read once as the server holds them in memory. */
let site: { timezone: string; currency: string } | undefined;

async function siteSettings(db: BaseDb): Promise<{ timezone: string; currency: string }> {
  if (!site) {
    const rows = await db.all("select `key`, value from core_settings where `key` in ('timezone', 'currency')");
    const stored = Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value)]));
    site = { timezone: stored.timezone ?? 'UTC', currency: stored.currency ?? 'USD' };
  }
  return site;
}

/** The signed-in staff member: their account, console access and the session's CSRF token, or undefined (no session, an idle one, no console role). */
export async function staffOf(db: BaseDb, cookie: string | undefined): Promise<{ username: string; access: 'admin' | 'support'; csrf: string } | undefined> {
  const token = /(?:^|;\s*)console_session=([0-9a-f]{64})(?:;|$)/.exec(cookie ?? '')?.[1];
  if (!token) return undefined;
  const at = now();
  const [session] = await db.all(SESSION, [createHash('sha256').update(token).digest('hex')]);
  if (!session) return undefined;
  if (session.last_seen_at <= addSeconds(at, -IDLE_SECONDS)) {
    await db.all('delete from console_sessions where id = ?', [session.id]);
    return undefined;
  }
  if (session.last_seen_at <= addSeconds(at, -TOUCH_SECONDS)) await db.all('update console_sessions set last_seen_at = ? where id = ?', [at, session.id]);
  const [account, roles] = await Promise.all([db.all(ACCOUNT, [session.user_id]), db.all(ROLES, [session.user_id, '1000-01-01 00:00:00', at])]);
  const slugs = new Set(roles.map((r) => r.slug));
  const access = ADMIN_ROLES.some((s) => slugs.has(s)) ? 'admin' : SUPPORT_ROLES.some((s) => slugs.has(s)) ? 'support' : undefined;
  return account[0] && access ? { username: account[0].username, access, csrf: String(session.csrf_token) } : undefined;
}

/** Why the database cannot take a write now, or undefined: a write tried and rolled back on SQLite, a `select 1` on MySQL. */
async function databaseFault(db: BaseDb): Promise<string | undefined> {
  try {
    if (!db.sqlite) {
      await db.pool!.query('select 1');
      return undefined;
    }
    const sqlite = db.sqlite;
    sqlite.tx(() => {
      sqlite.run('insert into core_settings (`key`, value) values (?, ?)', 'health.probe', '');
      throw PROBED;
    });
  } catch (err) {
    if (err !== PROBED) return 'The database cannot be written.';
  }
  return undefined;
}
const PROBED = new Error('probed');

/** Every figure of the dashboard, the statements run side by side. */
async function figures(db: BaseDb, timezone: string) {
  const at = now();
  const local = displayTimestamp(at, timezone);
  const today = parseClientTimestamp(`${local.slice(0, 10)} 00:00:00`, timezone)!;
  const month = parseClientTimestamp(`${local.slice(0, 8)}01 00:00:00`, timezone)!;
  const days = Array.from({ length: CHART_DAYS }, (_, i) =>
    new Date(Date.parse(`${local.slice(0, 10)}T00:00:00Z`) - (CHART_DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
  const disputesSince = addSeconds(at, -DISPUTE_DAYS * 86_400);
  const one = async (sql: string, params: (string | number)[] = []) => (await db.all(sql, params))[0] ?? {};
  const chartFrom = parseClientTimestamp(`${days[0]} 00:00:00`, timezone)!;
  const [wallets, open, awaiting, hours, queue, silent, disputes, paid, trouble, subs, fault] = await Promise.all([
    one('select sum(balance) as total from credits_wallets'),
    one('select count(*) as n from support_tickets where status_id <> ?', [4]),
    one('select count(*) as n from support_tickets where status_id in (?, ?)', [1, 3]),
    db.all(SALES, [today, month, [month, chartFrom].sort()[0]!]),
    one(QUEUE_HEALTH, [addSeconds(at, -STUCK_MINUTES * 60)]),
    one(SILENT_SERVERS, [addSeconds(at, -SILENT_MINUTES * 60)]),
    one(DISPUTES, [disputesSince]),
    one(PAID_SINCE, [disputesSince]),
    one(TROUBLE),
    db.all(SUBSCRIPTIONS, [addSeconds(at, -CHURN_DAYS * 86_400)]),
    databaseFault(db),
  ]);
  const since = (period: number) => {
    const by = new Map<string, { type: string; n: number; total: number }>();
    for (const h of hours.filter((r) => Number(r.period) >= period)) {
      const sum = by.get(h.type) ?? { type: h.type, n: 0, total: 0 };
      by.set(h.type, { type: h.type, n: sum.n + Number(h.n), total: sum.total + Number(h.total ?? 0) });
    }
    return [...by.values()];
  };
  const byDay = (type: string) => {
    const sums = new Map(days.map((d) => [d, 0]));
    for (const h of hours) {
      const d = Number(h.period) === 2 ? days.at(-1)! : displayTimestamp(`${h.hour}:00:00`, timezone).slice(0, 10);
      if (h.type === type && sums.has(d)) sums.set(d, sums.get(d)! + Number(h.total ?? 0));
    }
    return [...sums.values()];
  };
  return {
    wallets,
    open,
    awaiting,
    day: since(2),
    mon: since(1),
    charts: { credit: byDay('credit'), payment: byDay('payment') },
    days,
    queue,
    silent,
    disputes,
    paid,
    trouble,
    subs,
    fault,
  };
}

/** Subscriptions running and past due, the monthly recurring revenue in cents, and the churn of the window. */
function subscriptionFigures(rows: Row[], since: string) {
  let [active, pastDue, mrr, atStart, churned] = [0, 0, 0, 0, 0];
  for (const r of rows) {
    if (r.status === 'active') active++;
    if (r.status === 'past_due') pastDue++;
    if (r.status === 'active' && !Number(r.cancel_at_period_end) && Number(r.period_no) > 0)
      mrr += (Number(r.price) * PER_MONTH[r.interval_unit]!) / Number(r.interval_count);
    if (r.start_date < since) {
      atStart++;
      if (r.status === 'ended') churned++;
    }
  }
  return { active, pastDue, mrr: Math.round(mrr), churn: atStart === 0 ? 0 : churned / atStart, churned };
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const cents = (n: unknown) => (Number(n ?? 0) / 100).toFixed(2);
const n = (v: unknown) => Number(v ?? 0);

/** A chart as bars of an inline SVG, scaled to its largest value. */
function chart(heading: string, days: string[], values: number[]): string {
  const top = Math.max(1, ...values);
  const bars = values.map(
    (v, i) => `<rect x="${i * 10}" y="${100 - (v * 100) / top}" width="8" height="${(v * 100) / top}"><title>${days[i]}: ${cents(v)}</title></rect>`,
  );
  return `<h2>${esc(heading)}</h2><svg viewBox="0 0 ${days.length * 10} 100" role="img" aria-label="${esc(heading)}">${bars.join('')}</svg>`;
}

async function dashboardPage(db: BaseDb, staff: { username: string; access: 'admin' | 'support' }): Promise<string> {
  const { timezone, currency } = await siteSettings(db);
  const f = await figures(db, timezone);
  const sales = (rows: Row[], type: string) => rows.find((r) => r.type === type) ?? { n: 0, total: 0 };
  const s = subscriptionFigures(f.subs, addSeconds(now(), -CHURN_DAYS * 86_400));
  const disputed = n(f.disputes.open) + n(f.disputes.won) + n(f.disputes.lost);
  const attention = [
    ...(f.fault ? [`Database: ${f.fault}`] : []),
    ...(
      [
        [n(f.queue.failed), 'commands failed for good'],
        [n(f.queue.stuck), `commands waiting for more than ${STUCK_MINUTES} minutes`],
        [n(f.silent.n), `active game servers not seen for ${SILENT_MINUTES} minutes`],
        [n(f.trouble.disputed), 'payments disputed'],
        [n(f.trouble.debtors), `players owing ${cents(f.trouble.debt)} in credits`],
        [n(f.trouble.refund_due), 'guest payments to refund by hand'],
        [n(f.disputes.open), 'disputes open at the gateways'],
        [n(f.awaiting.n), 'tickets waiting for an answer'],
      ] as const
    )
      .filter(([count]) => count > 0)
      .map(([count, text]) => `${count} ${text}`),
  ];
  // Support staff see the sections open to them: players (credits) and tickets.
  const stats: [string, string][] = [
    ['credits in circulation', cents(f.wallets.total)],
    ['tickets not closed', String(n(f.open.n))],
    ...(staff.access === 'admin'
      ? ([
          [`credit sales today (${n(sales(f.day, 'credit').n)} orders)`, cents(sales(f.day, 'credit').total)],
          [`credit sales this month (${n(sales(f.mon, 'credit').n)} orders)`, cents(sales(f.mon, 'credit').total)],
          [`${currency} received today`, cents(sales(f.day, 'payment').total)],
          [`${currency} received this month`, cents(sales(f.mon, 'payment').total)],
          ['commands waiting to be delivered', String(n(f.queue.backlog))],
          [`active servers not seen for ${SILENT_MINUTES} minutes`, String(n(f.silent.n))],
          ['disputes open', String(n(f.disputes.open))],
          [`dispute rate (${DISPUTE_DAYS} days)`, `${((n(f.paid.n) ? disputed / n(f.paid.n) : 0) * 100).toFixed(2)}%`],
          ['subscriptions running', String(s.active)],
          ['subscriptions past due', String(s.pastDue)],
          ['monthly recurring revenue', `${cents(s.mrr)} ${currency}`],
          [`churn (${CHURN_DAYS} days)`, `${(s.churn * 100).toFixed(1)}% (${s.churned} ended)`],
        ] as [string, string][])
      : []),
  ];
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Dashboard</title></head><body><p>Signed in as ${esc(staff.username)}</p>` +
    `<h1>Dashboard</h1><section><h2>Needs attention</h2><ul>${attention.map((a) => `<li>${esc(a)}</li>`).join('') || '<li>Nothing needs attention.</li>'}</ul></section>` +
    (staff.access === 'admin'
      ? chart(`Credit sales, last ${CHART_DAYS} days`, f.days, f.charts.credit) +
        chart(`${currency} received, last ${CHART_DAYS} days`, f.days, f.charts.payment)
      : '') +
    `<dl>${stats.map(([label, value]) => `<dt>${esc(label)}</dt><dd>${esc(value)}</dd>`).join('')}</dl></body></html>`
  );
}

export const baselineRoutes: BaselineRoute[] = [
  {
    method: 'GET',
    url: '/console',
    session: true,
    async handler(db, request, reply) {
      const staff = await staffOf(db, request.headers.cookie);
      if (!staff) return reply.redirect('/console/login', 303);
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(await dashboardPage(db, staff));
    },
  },
];
