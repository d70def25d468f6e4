/**
 * What promotions do during a buy, all through the store checkout's one door (its BuyParticipant):
 * a sale's price of each product, the coupon and gift card codes priced (within the limits on
 * wrong codes), and inside the order's transaction what the order used and bought: a coupon's
 * use, a gift card's spend, a sale's figures, the gift cards a product sells. A refund gives it
 * back. Sales and the gift-card products are held in memory (reloaded every `cacheSeconds`, and at
 * once after a change), so a buy or a listing without a promotion running costs no statement.
 * Every use of a coupon and every movement of a card is a conditional update: the database
 * decides the last use and keeps a balance from going below zero.
 */
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { formatMoney, now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { Adjustment, BuyParticipant, Checkout, PricedProduct, PricingLine, PromotionCodes, PurchaseBuyer } from '../store/contract.ts';
import {
  PromotionsCoupon,
  PromotionsCouponPlayer,
  PromotionsCouponUse,
  PromotionsGiftCard,
  PromotionsGiftCardLedger,
  PromotionsGiftCardProduct,
  PromotionsSale,
  PromotionsSaleUse,
} from './entities.ts';
import { DomainError } from '../../core/errors.ts';
import { findCard, issueCard, writeLedger, type Coupon, type Sale } from './gift-cards.ts';
import { holderOf, type WrongCodes } from './wrong-codes.ts';

export const COUPON_KIND = 'coupon';
export const GIFT_CARD_KIND = 'gift-card';

const Co = PromotionsCoupon.c;
const Pl = PromotionsCouponPlayer.c;
const Use = PromotionsCouponUse.c;
const Card = PromotionsGiftCard.c;
const Led = PromotionsGiftCardLedger.c;
const Sa = PromotionsSale.c;
const SaUse = PromotionsSaleUse.c;

const lineTotal = (lines: PricingLine[]) => lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0);
const ids = (json: string) => JSON.parse(json) as number[];

/**
 * A basket's buyer as coupons count players: an account by its lower-cased name, a guest by the
 * name typed at checkout in a space of its own (`guest:`), so a guest under a player's name never
 * spends that player's uses. A typed name proves nothing (any player's, a new one each time): a
 * coupon limited per player is for accounts only.
 */
const buyerKey = (checkout: Checkout) => (checkout.userId === 0 ? `guest:${checkout.username.toLowerCase()}` : checkout.username.toLowerCase());
/**
 * A code refused, its message for the player who typed it; `field` (`coupon`, `giftCard`) says
 * which code, so a form that sent both keeps the other (the storefront's basket).
 */
type CodeField = 'coupon' | 'giftCard';
const invalid = (field: CodeField, message: string) => new DomainError('PROMOTION_INVALID', message, { details: { field } });
const usedUp = (field: CodeField, message: string) => new DomainError('PROMOTION_USED_UP', message, { details: { field } });
const perPlayerNeedsAccount = (coupon: Coupon) => invalid('coupon', `the coupon ${coupon.code} counts its uses per player: sign in to use it.`);

/** Whether `at` is within an optional window (start included, end excluded). */
function within(at: string, start: string | null, end: string | null): boolean {
  return (start === null || start <= at) && (end === null || at < end);
}

/** A list price less a sale's percent (what it takes off rounded down to a cent). */
function salePriceOf(price: number, percent: number): number {
  return price - Math.floor((price * percent) / 100);
}

export class PromotionsInBuy implements BuyParticipant {
  readonly #db: Database;
  readonly #codeLength: number;
  readonly #wrongCodes: WrongCodes;
  /** Sales not ended and not paused, and the products that sell a gift card: what every buy and listing asks. */
  #sales: (Sale & { categories: number[] })[] = [];
  #giftProducts = new Map<number, number>();

  constructor(deps: { db: Database; codeLength: number; wrongCodes: WrongCodes }) {
    this.#db = deps.db;
    this.#codeLength = deps.codeLength;
    this.#wrongCodes = deps.wrongCodes;
  }

  /** Reads again what is held in memory. */
  async reload(): Promise<void> {
    const [sales, products] = await Promise.all([
      PromotionsSale.select(this.#db, sql`where ${Sa.isActive} = 1 and ${Sa.endDate} > ${now()} order by ${Sa.id}`),
      PromotionsGiftCardProduct.select(this.#db),
    ]);
    this.#sales = sales.map((s) => ({ ...s, categories: ids(s.categoryIds) }));
    this.#giftProducts = new Map(products.map((p) => [p.productId, p.amount]));
  }

  // ---- pricing

  /** The running sale that lowers the product most. */
  #bestSale(p: Pick<PricedProduct, 'categoryId' | 'price'>, at: string): { sale: Sale; price: number } | undefined {
    let best: { sale: Sale; price: number } | undefined;
    for (const sale of this.#sales) {
      if (sale.startDate > at || sale.endDate <= at) continue;
      if (sale.categories.length && !sale.categories.includes(p.categoryId)) continue;
      const price = salePriceOf(p.price, sale.percent);
      if (!best || price < best.price) best = { sale, price };
    }
    return best;
  }

  salePrice(p: PricedProduct, at: string): number | undefined {
    if (this.#sales.length === 0) return undefined;
    return this.#bestSale(p, at)?.price;
  }

  /** A client's codes are judged within the limits on wrong codes (wrong-codes.ts). */
  judging<T>(codes: PromotionCodes, buyer: PurchaseBuyer, fn: () => Promise<T>): Promise<T> {
    return codes.sender ? this.#wrongCodes.judging(codes.sender, holderOf(buyer, codes.sender), fn) : fn();
  }

  async price(checkout: Checkout): Promise<Adjustment[]> {
    const adjustments: Adjustment[] = [];
    let remaining = checkout.total;
    const couponCode = checkout.codes.coupon?.trim();
    if (couponCode) {
      const amount = await this.#couponAmount(checkout, couponCode, remaining);
      adjustments.push({ kind: COUPON_KIND, code: amount.code, amount: amount.amount, paid: false });
      remaining -= amount.amount;
    }
    const cardCode = checkout.codes.giftCard?.trim();
    if (cardCode) {
      const card = await findCard(this.#db, cardCode);
      if (!card?.isActive) throw invalid('giftCard', `there is no gift card ${cardCode} in use.`);
      if (card.balance <= 0) throw invalid('giftCard', `the gift card ${card.code} has no balance left.`);
      const amount = Math.min(card.balance, remaining);
      if (amount > 0) adjustments.push({ kind: GIFT_CARD_KIND, code: card.code, amount, paid: true });
    }
    return adjustments;
  }

  async #couponAmount(checkout: Checkout, code: string, remaining: number): Promise<{ code: string; amount: number }> {
    const [coupon] = await PromotionsCoupon.select(this.#db, sql`where ${Co.codeKey} = ${code.toLowerCase()}`);
    const at = now();
    if (!coupon?.isActive || !within(at, coupon.startDate, coupon.endDate)) throw invalid('coupon', `there is no coupon ${code} running.`);
    if (coupon.maxUses > 0 && coupon.uses >= coupon.maxUses) throw usedUp('coupon', `the coupon ${coupon.code} is used up.`);
    if (coupon.perPlayer > 0) {
      if (checkout.userId === 0) throw perPlayerNeedsAccount(coupon);
      const [player] = await PromotionsCouponPlayer.select(this.#db, sql`where ${Pl.couponId} = ${coupon.id} and ${Pl.buyerKey} = ${buyerKey(checkout)}`);
      if (player && player.uses >= coupon.perPlayer) {
        throw invalid('coupon', `${checkout.username} has used the coupon ${coupon.code} ${player.uses} times, the most it allows.`);
      }
    }
    if (coupon.minBasket > 0 && checkout.total < coupon.minBasket) {
      throw invalid('coupon', `the coupon ${coupon.code} needs a basket of at least ${formatMoney(coupon.minBasket)}.`);
    }
    const products = ids(coupon.productIds);
    const categories = ids(coupon.categoryIds);
    const eligible = checkout.lines.filter(
      (l) =>
        (products.length === 0 || products.includes(l.productId)) &&
        (categories.length === 0 || categories.includes(l.categoryId)) &&
        (coupon.stacksWithSale || l.unitTotal >= l.ownPrice),
    );
    const base = lineTotal(eligible);
    const onSale = coupon.stacksWithSale ? '' : ' (it does not apply to products on sale)';
    if (base === 0) throw invalid('coupon', `the coupon ${coupon.code} applies to nothing in the basket${onSale}.`);
    const off = coupon.kind === 'percent' ? Math.floor((base * coupon.value) / 100) : Math.min(coupon.value, base);
    return { code: coupon.code, amount: Math.min(off, remaining) };
  }

  async take(checkout: Checkout, orderId: number, adjustments: Adjustment[]): Promise<void> {
    const at = now();
    await this.#recordSales(checkout, orderId, at);
    await this.#issueBought(orderId, checkout.userId, checkout.lines);
    // The shared rows last (a coupon's count), after each buyer's own (a gift card's balance).
    for (const a of adjustments) if (a.kind === GIFT_CARD_KIND) await this.#spendCard(checkout, orderId, a, at);
    for (const a of adjustments) if (a.kind === COUPON_KIND) await this.#useCoupon(checkout, orderId, a, at);
  }

  /**
   * The coupon's use and the player's, each a conditional update: of racing buyers, only those within
   * the limits pass. The coupon's count, which every buyer of it shares, is the last statement: on
   * MySQL its row stays locked until the commit.
   */
  async #useCoupon(checkout: Checkout, orderId: number, a: Adjustment, at: string): Promise<void> {
    const key = a.code.toLowerCase();
    const usedUpAll = () => usedUp('coupon', `the coupon ${a.code} is used up.`);
    const [coupon] = await PromotionsCoupon.select(this.#db, sql`where ${Co.codeKey} = ${key} and ${Co.isActive} = 1`);
    if (!coupon) throw usedUpAll();
    const buyer = buyerKey(checkout);
    // A guest is counted by no player (a limit per player set after its quote refuses it here).
    if (checkout.userId === 0) {
      if (coupon.perPlayer > 0) throw perPlayerNeedsAccount(coupon);
    } else if (!(await this.#countPlayer(coupon, buyer))) {
      throw usedUp('coupon', `${checkout.username} has used the coupon ${a.code} ${coupon.perPlayer} times, the most it allows.`);
    }
    await PromotionsCouponUse.insert(this.#db, {
      couponId: coupon.id,
      orderId,
      buyerKey: buyer,
      amount: a.amount,
      revenue: checkout.total - a.amount,
      status: 'used',
      creationDate: at,
    });
    const { affectedRows } = await this.#db.run(sql`update ${PromotionsCoupon} set ${Co.uses} = ${Co.uses} + 1
      where ${Co.id} = ${coupon.id} and ${Co.isActive} = 1 and (${Co.maxUses} = 0 or ${Co.uses} < ${Co.maxUses})`);
    if (affectedRows === 0) throw usedUpAll();
  }

  /** One more use by the player, unless it would pass the coupon's limit; the player's first use makes the row (its unique key decides a race). */
  async #countPlayer(coupon: Coupon, buyer: string): Promise<boolean> {
    const limit = coupon.perPlayer > 0 ? sql` and ${Pl.uses} < ${coupon.perPlayer}` : sql``;
    const step = () =>
      this.#db.run(sql`update ${PromotionsCouponPlayer} set ${Pl.uses} = ${Pl.uses} + 1
      where ${Pl.couponId} = ${coupon.id} and ${Pl.buyerKey} = ${buyer}${limit}`);
    if ((await step()).affectedRows > 0) return true;
    try {
      await PromotionsCouponPlayer.insert(this.#db, { couponId: coupon.id, buyerKey: buyer, uses: 1 });
      return true;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return (await step()).affectedRows > 0;
    }
  }

  async #spendCard(checkout: Checkout, orderId: number, a: Adjustment, at: string): Promise<void> {
    const key = a.code.toLowerCase();
    const { affectedRows } = await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = ${Card.balance} - ${a.amount}
      where ${Card.codeKey} = ${key} and ${Card.isActive} = 1 and ${Card.balance} >= ${a.amount}`);
    if (affectedRows === 0) throw usedUp('giftCard', `the gift card ${a.code} no longer holds ${formatMoney(a.amount)}.`);
    const [card] = await PromotionsGiftCard.select(this.#db, sql`where ${Card.codeKey} = ${key}`);
    await writeLedger(this.#db, card!, -a.amount, 'spend', orderId, checkout.userId, at);
  }

  /** What each running sale took off the order's lines, for its figures. */
  async #recordSales(checkout: Checkout, orderId: number, at: string): Promise<void> {
    if (this.#sales.length === 0) return;
    const bySale = new Map<number, { amount: number; revenue: number }>();
    for (const l of checkout.lines) {
      if (l.unitTotal >= l.ownPrice) continue;
      const best = this.#bestSale({ categoryId: l.categoryId, price: l.unitPrice }, at);
      if (!best) continue;
      const figures = bySale.get(best.sale.id) ?? { amount: 0, revenue: 0 };
      figures.amount += (l.ownPrice - l.unitTotal) * l.quantity;
      figures.revenue += l.unitTotal * l.quantity;
      bySale.set(best.sale.id, figures);
    }
    if (bySale.size === 0) return;
    await PromotionsSaleUse.insertMany(
      this.#db,
      [...bySale].map(([saleId, f]) => ({ saleId, orderId, ...f, status: 'used', creationDate: at })),
    );
  }

  /** A refunded order gives its coupon's use back, its gift cards' amounts back, and voids what is left of a card it bought. */
  async refunded(orderId: number, userId: number): Promise<void> {
    const at = now();
    const uses = await PromotionsCouponUse.select(this.#db, sql`where ${Use.orderId} = ${orderId} and ${Use.status} = 'used'`);
    for (const use of uses) {
      await PromotionsCouponUse.update(this.#db, use.id, { status: 'returned' });
      await this.#db.run(sql`update ${PromotionsCoupon} set ${Co.uses} = ${Co.uses} - 1 where ${Co.id} = ${use.couponId} and ${Co.uses} > 0`);
      await this.#db.run(sql`update ${PromotionsCouponPlayer} set ${Pl.uses} = ${Pl.uses} - 1
        where ${Pl.couponId} = ${use.couponId} and ${Pl.buyerKey} = ${use.buyerKey} and ${Pl.uses} > 0`);
    }
    await this.#db.run(sql`update ${PromotionsSaleUse} set ${SaUse.status} = 'returned' where ${SaUse.orderId} = ${orderId}`);
    const spent = await PromotionsGiftCardLedger.select(this.#db, sql`where ${Led.orderId} = ${orderId} and ${Led.reason} = 'spend' order by ${Led.id}`);
    for (const s of spent) {
      await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = ${Card.balance} - ${s.delta} where ${Card.id} = ${s.cardId}`);
      await writeLedger(this.#db, (await PromotionsGiftCard.find(this.#db, s.cardId))!, -s.delta, 'refund', orderId, userId, at);
    }
    for (const card of await PromotionsGiftCard.select(this.#db, sql`where ${Card.orderId} = ${orderId}`)) {
      const { affectedRows } = await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = 0, ${Card.isActive} = 0
        where ${Card.id} = ${card.id} and ${Card.balance} = ${card.balance}`);
      if (affectedRows > 0) await writeLedger(this.#db, { ...card, balance: 0 }, -card.balance, 'void', orderId, userId, at);
    }
  }

  /**
   * Deleted test orders (test mode cleared): their coupon uses are given back to the coupon's and
   * the player's counts and deleted, with their sale uses, so no figure counts a test.
   */
  async ordersCleared(orderIds: number[]): Promise<void> {
    const uses = await PromotionsCouponUse.select(this.#db, sql`where ${Use.orderId} in ${orderIds} and ${Use.status} = 'used'`);
    for (const use of uses) {
      await this.#db.run(sql`update ${PromotionsCoupon} set ${Co.uses} = ${Co.uses} - 1 where ${Co.id} = ${use.couponId} and ${Co.uses} > 0`);
      await this.#db.run(sql`update ${PromotionsCouponPlayer} set ${Pl.uses} = ${Pl.uses} - 1
        where ${Pl.couponId} = ${use.couponId} and ${Pl.buyerKey} = ${use.buyerKey} and ${Pl.uses} > 0`);
    }
    await this.#db.run(sql`delete from ${PromotionsCouponUse} where ${Use.orderId} in ${orderIds}`);
    await this.#db.run(sql`delete from ${PromotionsSaleUse} where ${SaUse.orderId} in ${orderIds}`);
  }

  /** Cards bought with an order: one per unit of a gift-card product, owned by the buyer (owner 0: a guest's). */
  async #issueBought(orderId: number, userId: number, items: { productId: number; quantity: number }[]): Promise<void> {
    for (const item of items) {
      const amount = this.#giftProducts.get(item.productId);
      if (!amount) continue;
      for (let i = 0; i < item.quantity; i++) {
        await issueCard(this.#db, this.#codeLength, { amount, note: `bought with order ${orderId}`, ownerId: userId, orderId, reason: 'purchase' });
      }
    }
  }
}
