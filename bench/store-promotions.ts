/**
 * The baseline buy's promotions (bench/store.ts), by hand as the server's promotions feature does
 * them: the running sales held in memory and read again every few seconds (so a buy without a sale
 * or a coupon costs no statement), a coupon looked up and priced in the buy's transaction, its use
 * counted by conditional updates, and each code judged within the limits on wrong codes (counted in
 * core_rate_limits, claimed before and given back after, as the server's AttemptLimit does).
 */
import { createHash } from 'node:crypto';
import type { BaseDb, Row } from './base-db.ts';
import { counted } from './base-limits.ts';

/** A buy refused; `wrongCode`: for its coupon, so the attempt stays counted against the client. */
export class Refused extends Error {
  readonly wrongCode: boolean;

  constructor(message: string, wrongCode = false) {
    super(message);
    this.wrongCode = wrongCode;
  }
}

/** Over a limit on wrong codes: a 429 with Retry-After. */
export class Limited extends Error {
  readonly retryAfter: number;

  constructor(retryAfter: number) {
    super(`Too many wrong codes; try again in ${Math.ceil(retryAfter / 60)} min.`);
    this.retryAfter = retryAfter;
  }
}

interface Sale {
  id: number;
  percent: number;
  categories: number[];
  start: string;
  end: string;
}

/** As the server's `plugins.promotions.cacheSeconds` (config/default.json). */
const SALES_MS = 5000;
let sales: Sale[] = [];
let salesAt = Number.NEGATIVE_INFINITY;

/** The sales not ended and not paused, read again once SALES_MS have passed. */
export async function runningSales(db: BaseDb, at: string): Promise<Sale[]> {
  if (Date.now() - salesAt >= SALES_MS) {
    const rows = await db.all('select id, percent, category_ids, start_date, end_date from promotions_sales where is_active = 1 and end_date > ? order by id', [
      at,
    ]);
    sales = rows.map((r) => ({
      id: Number(r.id),
      percent: Number(r.percent),
      categories: JSON.parse(r.category_ids) as number[],
      start: r.start_date,
      end: r.end_date,
    }));
    salesAt = Date.now();
  }
  return sales;
}

/** The running sale that lowers a product of `categoryId` listed at `price` most, with the price it makes. */
export function bestSale(running: Sale[], categoryId: number, price: number, at: string): { id: number; price: number } | undefined {
  let best: { id: number; price: number } | undefined;
  for (const sale of running) {
    if (sale.start > at || sale.end <= at || (sale.categories.length && !sale.categories.includes(categoryId))) continue;
    const lowered = price - Math.floor((price * sale.percent) / 100);
    if (!best || lowered < best.price) best = { id: sale.id, price: lowered };
  }
  return best;
}

/** A line as promotions see it, in cents a unit: its own price (after its discount) and what it costs now (after a sale). */
export interface PricedLine {
  id: number;
  categoryId: number;
  quantity: number;
  own: number;
  unit: number;
  sale?: number;
}

export const COUPON =
  'select id, code, kind, value, min_basket, start_date, end_date, max_uses, per_player, uses, product_ids, category_ids, stacks_with_sale, is_active ' +
  'from promotions_coupons where code_key = ?';
export const COUPON_PLAYER = 'select uses from promotions_coupon_players where coupon_id = ? and buyer_key = ?';

/** What the coupon (read with COUPON, and its player's row with COUPON_PLAYER when it limits players) takes off `total`, or why not. */
export function couponOff(code: string, coupon: Row | undefined, player: Row | undefined, lines: PricedLine[], total: number, at: string): number {
  const within = coupon && (coupon.start_date === null || coupon.start_date <= at) && (coupon.end_date === null || at < coupon.end_date);
  if (!coupon || Number(coupon.is_active) !== 1 || !within) throw new Refused(`there is no coupon ${code} running.`, true);
  if (Number(coupon.max_uses) > 0 && Number(coupon.uses) >= Number(coupon.max_uses)) throw new Refused(`the coupon ${coupon.code} is used up.`, true);
  if (player && Number(player.uses) >= Number(coupon.per_player)) throw new Refused(`the coupon ${coupon.code} is used up for this player.`, true);
  if (total < Number(coupon.min_basket)) throw new Refused(`the coupon ${coupon.code} needs a bigger basket.`, true);
  const products = JSON.parse(coupon.product_ids) as number[];
  const categories = JSON.parse(coupon.category_ids) as number[];
  const base = lines
    .filter(
      (l) =>
        (products.length === 0 || products.includes(l.id)) &&
        (categories.length === 0 || categories.includes(l.categoryId)) &&
        (Number(coupon.stacks_with_sale) === 1 || l.unit >= l.own),
    )
    .reduce((sum, l) => sum + l.unit * l.quantity, 0);
  if (base === 0) throw new Refused(`the coupon ${coupon.code} applies to nothing in the basket.`, true);
  const value = Number(coupon.value);
  return Math.min(coupon.kind === 'percent' ? Math.floor((base * value) / 100) : Math.min(value, base), total);
}

/** A coupon taken by an order: its row, the buyer's key and what it took off. */
export interface Taken {
  coupon: Row;
  buyer: string;
  amount: number;
}

type Statement = { sql: string; params: (string | number)[] };

/** The coupon's use, counted unless the coupon is used up meanwhile (its changes must be 1). */
export const useCoupon = (t: Taken): Statement => ({
  sql: 'update promotions_coupons set uses = uses + 1 where id = ? and is_active = 1 and (max_uses = 0 or uses < max_uses)',
  params: [t.coupon.id],
});

/** The player's use counted on their row (within the coupon's limit per player); no change: their first use, inserted (PLAYER_FIRST). */
export const usePlayer = (t: Taken): Statement => ({
  sql: 'update promotions_coupon_players set uses = uses + 1 where coupon_id = ? and buyer_key = ? and (? = 0 or uses < ?)',
  params: [t.coupon.id, t.buyer, Number(t.coupon.per_player), Number(t.coupon.per_player)],
});
export const playerFirst = (t: Taken): Statement => ({
  sql: 'insert into promotions_coupon_players (coupon_id, buyer_key, uses) values (?, ?, 1)',
  params: [t.coupon.id, t.buyer],
});

/** The order's rows of what promotions took off it: the adjustment and the coupon's use, and each sale's figures. */
export function promotionRows(orderId: number, lines: PricedLine[], priced: number, taken: Taken | undefined, at: string): Statement[] {
  const rows: Statement[] = [];
  if (taken) {
    rows.push(
      {
        sql: "insert into store_order_adjustments (order_id, kind, code, amount, paid) values (?, 'coupon', ?, ?, 0)",
        params: [orderId, taken.coupon.code, taken.amount],
      },
      {
        sql: "insert into promotions_coupon_uses (coupon_id, order_id, buyer_key, amount, revenue, status, creation_date) values (?, ?, ?, ?, ?, 'used', ?)",
        params: [taken.coupon.id, orderId, taken.buyer, taken.amount, priced - taken.amount, at],
      },
    );
  }
  const bySale = new Map<number, { amount: number; revenue: number }>();
  for (const l of lines) {
    if (l.sale === undefined || l.unit >= l.own) continue;
    const figures = bySale.get(l.sale) ?? { amount: 0, revenue: 0 };
    figures.amount += (l.own - l.unit) * l.quantity;
    figures.revenue += l.unit * l.quantity;
    bySale.set(l.sale, figures);
  }
  if (bySale.size) {
    rows.push({
      sql: `insert into promotions_sale_uses (sale_id, order_id, amount, revenue, status, creation_date) values ${[...bySale].map(() => "(?, ?, ?, ?, 'used', ?)").join(', ')}`,
      params: [...bySale].flatMap(([sale, f]) => [sale, orderId, f.amount, f.revenue, at]),
    });
  }
  return rows;
}

// ---- the limits on wrong codes, as the server's config/default.json sets them (plugins.promotions.wrongCodes)

const LIMITS = { api: { max: 100, windowMs: 600_000 }, account: { max: 10, windowMs: 600_000 } };
const bucket = (key: string) => createHash('sha256').update(`promotions wrong codes\n${key}`).digest('hex');

/** Counts the attempt against the API client's address and the account; over either limit, Limited. */
async function claim(db: BaseDb, buckets: string[]): Promise<void> {
  const at = Date.now();
  const rows = await counted(db, buckets, [LIMITS.api.windowMs, LIMITS.account.windowMs]);
  const over = rows.filter((r, i) => r.hits > (i === 0 ? LIMITS.api.max : LIMITS.account.max));
  if (over.length) throw new Limited(Math.max(...over.map((r) => Math.max(1, Math.ceil((r.expiresAt - at) / 1000)))));
}

/** The attempt taken back: the code was right (or the buy failed for another reason). */
async function giveBack(db: BaseDb, buckets: string[]): Promise<void> {
  await db.all('update core_rate_limits set hits = hits - 1 where bucket in (?, ?) and hits > 0 and expires_at > ?', [...buckets, Date.now()]);
}

/** `buy`, which judges a coupon sent by the API client at `address` for account `userId`, as one attempt given back unless the code was wrong. */
export async function judging<T>(db: BaseDb, address: string, userId: number, buy: () => Promise<T>): Promise<T> {
  const buckets = [bucket(`api:${address}`), bucket(`account:${userId}`)];
  await claim(db, buckets);
  let result: T;
  try {
    result = await buy();
  } catch (err) {
    if (!(err instanceof Refused && err.wrongCode)) await giveBack(db, buckets);
    throw err;
  }
  await giveBack(db, buckets);
  return result;
}
