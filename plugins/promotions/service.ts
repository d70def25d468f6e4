/**
 * Promotions: coupons, gift cards and sales, priced through the store's PriceAdjuster, and the
 * community goal. Sales and the gift-card products are held in memory (reloaded every
 * `cacheSeconds`, and at once after a change here), so a buy or a listing without a promotion
 * running costs no statement. Every use of a coupon and every movement of a card is a conditional
 * update: the database decides the last use and keeps a balance from going below zero.
 */
import { randomBytes } from 'node:crypto';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { sql } from '../../core/sql.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, displayTimestamp, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type {
  Adjustment, Checkout, PriceAdjuster, PricedProduct, PricingLine, PromotionCodes, PurchaseBuyer, StoreService,
} from '../store/contract.ts';
import type { CommunityGoal, PromotionsService } from './contract.ts';
import {
  PromotionsCoupon, PromotionsCouponPlayer, PromotionsCouponUse, PromotionsGiftCard, PromotionsGiftCardLedger, PromotionsGiftCardProduct,
  PromotionsSale, PromotionsSaleUse,
} from './entities.ts';
import { holderOf, type WrongCodes } from './wrong-codes.ts';

export type Coupon = TableRecord<typeof PromotionsCoupon>;
export type GiftCard = TableRecord<typeof PromotionsGiftCard>;
export type Sale = TableRecord<typeof PromotionsSale>;
export type LedgerRow = TableRecord<typeof PromotionsGiftCardLedger>;

export type CouponInput = Omit<Coupon, 'id' | 'codeKey' | 'uses' | 'creationDate'>;
export type SaleInput = Omit<Sale, 'id' | 'creationDate'>;

/** Uses and money of a promotion: orders (or movements) not refunded. */
export interface Figures {
  uses: number;
  /** Cents taken off (or, for a card, spent from it). */
  amount: number;
  /** Cents the orders brought. */
  revenue: number;
}

export const COUPON_KIND = 'coupon';
export const GIFT_CARD_KIND = 'gift-card';
const CODE = /^[A-Za-z0-9_-]{3,64}$/;

const Co = PromotionsCoupon.c;
const Pl = PromotionsCouponPlayer.c;
const Use = PromotionsCouponUse.c;
const Card = PromotionsGiftCard.c;
const Led = PromotionsGiftCardLedger.c;
const Sa = PromotionsSale.c;
const SaUse = PromotionsSaleUse.c;
const GP = PromotionsGiftCardProduct.c;

const invalid = (message: string) => new DomainError('PROMOTION_INVALID', message);
const usedUp = (message: string) => new DomainError('PROMOTION_USED_UP', message);
const lineTotal = (lines: PricingLine[]) => lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0);
const ids = (json: string) => JSON.parse(json) as number[];

/**
 * A basket's buyer as coupons count players: an account by its lower-cased name, a guest by the
 * name typed at checkout in a space of its own (`guest:`), so a guest under a player's name never
 * spends that player's uses. A typed name proves nothing (any player's, a new one each time): a
 * coupon limited per player is for accounts only.
 */
const buyerKey = (checkout: Checkout) => (checkout.userId === 0 ? `guest:${checkout.username.toLowerCase()}` : checkout.username.toLowerCase());
const perPlayerNeedsAccount = (coupon: Coupon) =>
  invalid(`coupon: the coupon ${coupon.code} counts its uses per player: sign in to use it.`);

/** Whether `at` is within an optional window (start included, end excluded). */
function within(at: string, start: string | null, end: string | null): boolean {
  return (start === null || start <= at) && (end === null || at < end);
}

export function salePriceOf(price: number, percent: number): number {
  return price - Math.floor((price * percent) / 100);
}

export interface PromotionsDeps {
  db: Database;
  settings: SettingsService;
  store: StoreService;
  credits: CreditsService;
  /** Characters of a gift card code made by the server. */
  codeLength: number;
  wrongCodes: WrongCodes;
}

export class DbPromotionsService implements PromotionsService, PriceAdjuster {
  readonly #db: Database;
  readonly #settings: SettingsService;
  readonly #store: StoreService;
  readonly #credits: CreditsService;
  readonly #codeLength: number;
  readonly #wrongCodes: WrongCodes;
  /** Sales not ended and not paused, and the products that sell a gift card: what every buy and listing asks. */
  #sales: (Sale & { categories: number[] })[] = [];
  #giftProducts = new Map<number, number>();

  constructor(deps: PromotionsDeps) {
    this.#db = deps.db;
    this.#settings = deps.settings;
    this.#store = deps.store;
    this.#credits = deps.credits;
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

  /** The products that sell a gift card, by product id: the amount a unit puts on a card. */
  giftProduct(productId: number): number | undefined {
    return this.#giftProducts.get(productId);
  }

  // ---- pricing (the store's PriceAdjuster)

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
      const card = await this.#card(cardCode);
      if (!card?.isActive) throw invalid(`giftCard: there is no gift card ${cardCode} in use.`);
      if (card.balance <= 0) throw invalid(`giftCard: the gift card ${card.code} has no balance left.`);
      const amount = Math.min(card.balance, remaining);
      if (amount > 0) adjustments.push({ kind: GIFT_CARD_KIND, code: card.code, amount, paid: true });
    }
    return adjustments;
  }

  async #couponAmount(checkout: Checkout, code: string, remaining: number): Promise<{ code: string; amount: number }> {
    const [coupon] = await PromotionsCoupon.select(this.#db, sql`where ${Co.codeKey} = ${code.toLowerCase()}`);
    const at = now();
    if (!coupon?.isActive || !within(at, coupon.startDate, coupon.endDate)) throw invalid(`coupon: there is no coupon ${code} running.`);
    if (coupon.maxUses > 0 && coupon.uses >= coupon.maxUses) throw usedUp(`coupon: the coupon ${coupon.code} is used up.`);
    if (coupon.perPlayer > 0) {
      if (checkout.userId === 0) throw perPlayerNeedsAccount(coupon);
      const [player] = await PromotionsCouponPlayer.select(this.#db, sql`where ${Pl.couponId} = ${coupon.id} and ${Pl.buyerKey} = ${buyerKey(checkout)}`);
      if (player && player.uses >= coupon.perPlayer) {
        throw invalid(`coupon: ${checkout.username} has used the coupon ${coupon.code} ${player.uses} times, the most it allows.`);
      }
    }
    if (coupon.minBasket > 0 && checkout.total < coupon.minBasket) {
      throw invalid(`coupon: the coupon ${coupon.code} needs a basket of at least ${formatMoney(coupon.minBasket)}.`);
    }
    const products = ids(coupon.productIds);
    const categories = ids(coupon.categoryIds);
    const eligible = checkout.lines.filter((l) => (products.length === 0 || products.includes(l.productId))
      && (categories.length === 0 || categories.includes(l.categoryId))
      && (coupon.stacksWithSale || l.unitTotal >= l.ownPrice));
    const base = lineTotal(eligible);
    const onSale = coupon.stacksWithSale ? '' : ' (it does not apply to products on sale)';
    if (base === 0) throw invalid(`coupon: the coupon ${coupon.code} applies to nothing in the basket${onSale}.`);
    const off = coupon.kind === 'percent' ? Math.floor((base * coupon.value) / 100) : Math.min(coupon.value, base);
    return { code: coupon.code, amount: Math.min(off, remaining) };
  }

  async take(checkout: Checkout, orderId: number, adjustments: Adjustment[]): Promise<void> {
    const at = now();
    for (const a of adjustments) {
      if (a.kind === COUPON_KIND) await this.#useCoupon(checkout, orderId, a, at);
      else if (a.kind === GIFT_CARD_KIND) await this.#spendCard(checkout, orderId, a, at);
    }
    await this.#recordSales(checkout, orderId, at);
  }

  /** The coupon's use and the player's, each a conditional update: of racing buyers, only those within the limits pass. */
  async #useCoupon(checkout: Checkout, orderId: number, a: Adjustment, at: string): Promise<void> {
    const key = a.code.toLowerCase();
    const { affectedRows } = await this.#db.run(sql`update ${PromotionsCoupon} set ${Co.uses} = ${Co.uses} + 1
      where ${Co.codeKey} = ${key} and ${Co.isActive} = 1 and (${Co.maxUses} = 0 or ${Co.uses} < ${Co.maxUses})`);
    if (affectedRows === 0) throw usedUp(`coupon: the coupon ${a.code} is used up.`);
    const [coupon] = await PromotionsCoupon.select(this.#db, sql`where ${Co.codeKey} = ${key}`);
    const buyer = buyerKey(checkout);
    // A guest is counted by no player (a limit per player set after its quote refuses it here).
    if (checkout.userId === 0) {
      if (coupon!.perPlayer > 0) throw perPlayerNeedsAccount(coupon!);
    } else if (!(await this.#countPlayer(coupon!, buyer))) {
      throw usedUp(`coupon: ${checkout.username} has used the coupon ${a.code} ${coupon!.perPlayer} times, the most it allows.`);
    }
    await PromotionsCouponUse.insert(this.#db, {
      couponId: coupon!.id, orderId, buyerKey: buyer, amount: a.amount, revenue: checkout.total - a.amount, status: 'used', creationDate: at,
    });
  }

  /** One more use by the player, unless it would pass the coupon's limit; the player's first use makes the row (its unique key decides a race). */
  async #countPlayer(coupon: Coupon, buyer: string): Promise<boolean> {
    const limit = coupon.perPlayer > 0 ? sql` and ${Pl.uses} < ${coupon.perPlayer}` : sql``;
    const step = () => this.#db.run(sql`update ${PromotionsCouponPlayer} set ${Pl.uses} = ${Pl.uses} + 1
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
    if (affectedRows === 0) throw usedUp(`giftCard: the gift card ${a.code} no longer holds ${formatMoney(a.amount)}.`);
    const [card] = await PromotionsGiftCard.select(this.#db, sql`where ${Card.codeKey} = ${key}`);
    await this.#ledger(card!, -a.amount, 'spend', orderId, checkout.userId, at);
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
    await PromotionsSaleUse.insertMany(this.#db, [...bySale].map(([saleId, f]) => ({ saleId, orderId, ...f, status: 'used', creationDate: at })));
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
      await this.#ledger((await PromotionsGiftCard.find(this.#db, s.cardId))!, -s.delta, 'refund', orderId, userId, at);
    }
    for (const card of await PromotionsGiftCard.select(this.#db, sql`where ${Card.orderId} = ${orderId}`)) {
      const { affectedRows } = await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = 0, ${Card.isActive} = 0
        where ${Card.id} = ${card.id} and ${Card.balance} = ${card.balance}`);
      if (affectedRows > 0) await this.#ledger({ ...card, balance: 0 }, -card.balance, 'void', orderId, userId, at);
    }
  }

  async #ledger(card: GiftCard, delta: number, reason: string, orderId: number | null, userId: number, at: string): Promise<void> {
    await PromotionsGiftCardLedger.insert(this.#db, { cardId: card.id, delta, balance: card.balance, reason, orderId, userId, creationDate: at });
  }

  /** Cards bought with an order: one per unit of a gift-card product, owned by the buyer. */
  async issueBought(orderId: number, userId: number, items: { productId: number; quantity: number }[]): Promise<void> {
    for (const item of items) {
      const amount = this.#giftProducts.get(item.productId);
      if (!amount) continue;
      for (let i = 0; i < item.quantity; i++) await this.#issue({ amount, note: `bought with order ${orderId}`, ownerId: userId, orderId, reason: 'purchase' });
    }
  }

  // ---- gift cards

  async #card(code: string): Promise<GiftCard | undefined> {
    return (await PromotionsGiftCard.select(this.#db, sql`where ${Card.codeKey} = ${code.toLowerCase()}`))[0];
  }

  #newCode(): string {
    // Letters and digits a player can read back without confusing 0/O or 1/I.
    const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
    return [...randomBytes(this.#codeLength)].map((b) => alphabet[b % alphabet.length]).join('');
  }

  async #issue(input: { amount: number; code?: string; note: string; ownerId: number; orderId: number; reason: string }): Promise<GiftCard> {
    const code = input.code ?? this.#newCode();
    const card = {
      code, codeKey: code.toLowerCase(), balance: input.amount, initialAmount: input.amount, isActive: true,
      ownerId: input.ownerId, orderId: input.orderId, note: input.note, creationDate: now(),
    };
    let id: number;
    try {
      id = await PromotionsGiftCard.insert(this.#db, card);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a gift card ${code} exists already.`);
      throw err;
    }
    const issued = { id, ...card };
    await this.#ledger(issued, input.amount, input.reason, input.orderId || null, input.ownerId, card.creationDate);
    return issued;
  }

  async issueCard(input: { amount: number; code?: string; note?: string }): Promise<GiftCard> {
    if (input.code !== undefined && !CODE.test(input.code)) throw new DomainError('VALIDATION_ERROR', 'code: 3 to 64 letters, digits, _ or -.');
    return this.#db.transaction(() => this.#issue({ amount: input.amount, code: input.code, note: input.note ?? '', ownerId: 0, orderId: 0, reason: 'issue' }));
  }

  async cards(): Promise<GiftCard[]> {
    return PromotionsGiftCard.select(this.#db, sql`order by ${Card.id} desc`);
  }

  async cardsOf(userId: number): Promise<GiftCard[]> {
    return PromotionsGiftCard.select(this.#db, sql`where ${Card.ownerId} = ${userId} order by ${Card.id} desc`);
  }

  async requireCard(id: number): Promise<GiftCard> {
    const card = await PromotionsGiftCard.find(this.#db, id);
    if (!card) throw new DomainError('GIFT_CARD_NOT_FOUND', `No gift card with ID ${id}.`);
    return card;
  }

  async cardByCode(code: string): Promise<GiftCard> {
    const card = await this.#card(code);
    if (!card) throw new DomainError('GIFT_CARD_NOT_FOUND', `No gift card ${code}.`);
    return card;
  }

  async updateCard(id: number, patch: { isActive?: boolean; note?: string }): Promise<GiftCard> {
    await this.requireCard(id);
    await PromotionsGiftCard.update(this.#db, id, patch);
    return this.requireCard(id);
  }

  /** A card never used is deleted; one with movements is kept for its ledger (CONFLICT: pause it instead). */
  async deleteCard(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const card = await this.requireCard(id);
      const moves = await PromotionsGiftCardLedger.select(this.#db, sql`where ${Led.cardId} = ${id}`);
      if (moves.length > 1) throw new DomainError('CONFLICT', `The gift card ${card.code} has been used: pause it instead.`);
      await this.#db.run(sql`delete from ${PromotionsGiftCardLedger} where ${Led.cardId} = ${id}`);
      await this.#db.run(sql`delete from ${PromotionsGiftCard} where ${Card.id} = ${id}`);
    });
  }

  async ledgerOf(cardId: number): Promise<LedgerRow[]> {
    return PromotionsGiftCardLedger.select(this.#db, sql`where ${Led.cardId} = ${cardId} order by ${Led.id}`);
  }

  async redeemGiftCard(userId: number, code: string): Promise<number> {
    return this.#db.transaction(async () => {
      const card = await this.#card(code.trim());
      if (!card?.isActive) throw invalid(`code: there is no gift card ${code} in use.`);
      if (card.balance <= 0) throw invalid(`code: the gift card ${card.code} has no balance left.`);
      // Only from the balance read: a spend or redeem in between changes it, and this one then does nothing.
      const { affectedRows } = await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = 0
        where ${Card.id} = ${card.id} and ${Card.balance} = ${card.balance}`);
      if (affectedRows === 0) throw usedUp(`code: the gift card ${card.code} was used meanwhile; try again.`);
      await this.#credits.change(userId, card.balance, { reason: 'gift-card' });
      await this.#ledger({ ...card, balance: 0 }, -card.balance, 'redeem', null, userId, now());
      return card.balance;
    });
  }

  balanceOf(userId: number): Promise<number> {
    return this.#credits.balance(userId);
  }

  async giftProducts(): Promise<{ productId: number; amount: number }[]> {
    return PromotionsGiftCardProduct.select(this.#db, sql`order by ${GP.productId}`);
  }

  async setGiftProduct(productId: number, amount: number): Promise<void> {
    if (!(await this.#store.productName(productId))) throw new DomainError('PRODUCT_NOT_FOUND', `productID: no product with ID ${productId}.`);
    await this.#db.transaction(async () => {
      await this.#db.run(sql`delete from ${PromotionsGiftCardProduct} where ${GP.productId} = ${productId}`);
      await PromotionsGiftCardProduct.insert(this.#db, { productId, amount });
    });
    await this.reload();
  }

  async removeGiftProduct(productId: number): Promise<void> {
    const { affectedRows } = await this.#db.run(sql`delete from ${PromotionsGiftCardProduct} where ${GP.productId} = ${productId}`);
    if (affectedRows === 0) throw new DomainError('PRODUCT_NOT_FOUND', `Product ${productId} sells no gift card.`);
    await this.reload();
  }

  // ---- coupons

  async coupons(): Promise<Coupon[]> {
    return PromotionsCoupon.select(this.#db, sql`order by ${Co.id} desc`);
  }

  async requireCoupon(id: number): Promise<Coupon> {
    const coupon = await PromotionsCoupon.find(this.#db, id);
    if (!coupon) throw new DomainError('COUPON_NOT_FOUND', `No coupon with ID ${id}.`);
    return coupon;
  }

  #checkCoupon(c: CouponInput): void {
    if (!CODE.test(c.code)) throw new DomainError('VALIDATION_ERROR', 'code: 3 to 64 letters, digits, _ or -.');
    if (c.kind === 'percent' && (c.value < 1 || c.value > 100)) throw new DomainError('VALIDATION_ERROR', 'value: a percent from 1 to 100.');
    if (c.value < 1) throw new DomainError('VALIDATION_ERROR', 'value must be above 0.');
    if (c.startDate && c.endDate && c.endDate <= c.startDate) throw new DomainError('VALIDATION_ERROR', 'endDate must be after startDate.');
  }

  async createCoupon(input: CouponInput): Promise<Coupon> {
    this.#checkCoupon(input);
    const coupon = { ...input, codeKey: input.code.toLowerCase(), uses: 0, creationDate: now() };
    try {
      return { id: await PromotionsCoupon.insert(this.#db, coupon), ...coupon };
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a coupon ${input.code} exists already (codes are case-insensitive).`);
      throw err;
    }
  }

  async updateCoupon(id: number, patch: Partial<CouponInput>): Promise<Coupon> {
    const current = await this.requireCoupon(id);
    const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<CouponInput>;
    this.#checkCoupon({ ...current, ...changes });
    try {
      await PromotionsCoupon.update(this.#db, id, changes.code === undefined ? changes : { ...changes, codeKey: changes.code.toLowerCase() });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a coupon ${changes.code} exists already (codes are case-insensitive).`);
      throw err;
    }
    return this.requireCoupon(id);
  }

  async deleteCoupon(id: number): Promise<void> {
    await this.requireCoupon(id);
    await this.#db.run(sql`delete from ${PromotionsCouponPlayer} where ${Pl.couponId} = ${id}`);
    await this.#db.run(sql`delete from ${PromotionsCoupon} where ${Co.id} = ${id}`);
  }

  /** Uses, money off and revenue of each promotion of a kind, by its id: orders not refunded. */
  async figures(kind: 'coupon' | 'sale' | 'card'): Promise<Map<number, Figures>> {
    type Row = { id: number; n: number | string; amount: number | string | null; revenue: number | string | null };
    const statement = kind === 'card'
      ? sql`select ${Led.cardId} as id, count(*) as n, -sum(${Led.delta}) as amount, 0 as revenue from ${PromotionsGiftCardLedger}
          where ${Led.reason} in ('spend', 'redeem', 'refund') group by ${Led.cardId}`
      : kind === 'coupon'
        ? sql`select ${Use.couponId} as id, count(*) as n, sum(${Use.amount}) as amount, sum(${Use.revenue}) as revenue from ${PromotionsCouponUse}
            where ${Use.status} = 'used' group by ${Use.couponId}`
        : sql`select ${SaUse.saleId} as id, count(*) as n, sum(${SaUse.amount}) as amount, sum(${SaUse.revenue}) as revenue from ${PromotionsSaleUse}
            where ${SaUse.status} = 'used' group by ${SaUse.saleId}`;
    const rows = await this.#db.query<Row>(statement);
    return new Map(rows.map((r) => [Number(r.id), { uses: Number(r.n), amount: Number(r.amount ?? 0), revenue: Number(r.revenue ?? 0) }]));
  }

  // ---- sales

  async sales(): Promise<Sale[]> {
    return PromotionsSale.select(this.#db, sql`order by ${Sa.id} desc`);
  }

  async requireSale(id: number): Promise<Sale> {
    const sale = await PromotionsSale.find(this.#db, id);
    if (!sale) throw new DomainError('SALE_NOT_FOUND', `No sale with ID ${id}.`);
    return sale;
  }

  #checkSale(s: SaleInput): void {
    if (s.percent < 1 || s.percent > 100) throw new DomainError('VALIDATION_ERROR', 'percent: from 1 to 100.');
    if (s.endDate <= s.startDate) throw new DomainError('VALIDATION_ERROR', 'endDate must be after startDate.');
  }

  async createSale(input: SaleInput): Promise<Sale> {
    this.#checkSale(input);
    const sale = { ...input, creationDate: now() };
    const id = await PromotionsSale.insert(this.#db, sale);
    await this.reload();
    return { id, ...sale };
  }

  async updateSale(id: number, patch: Partial<SaleInput>): Promise<Sale> {
    const current = await this.requireSale(id);
    const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<SaleInput>;
    this.#checkSale({ ...current, ...changes });
    await PromotionsSale.update(this.#db, id, changes);
    await this.reload();
    return this.requireSale(id);
  }

  async deleteSale(id: number): Promise<void> {
    await this.requireSale(id);
    await this.#db.run(sql`delete from ${PromotionsSale} where ${Sa.id} = ${id}`);
    await this.reload();
  }

  // ---- community goal

  /** The period's bounds as stored UTC times: the settings' days, or this calendar month, in the site's zone. */
  #period(): { start: string; end: string } {
    const { timezone, promotionsGoalStart, promotionsGoalEnd } = this.#settings.get();
    const today = displayTimestamp(now(), timezone);
    const month = today.slice(0, 7);
    const [year, mon] = month.split('-').map(Number) as [number, number];
    const nextMonth = mon === 12 ? `${year + 1}-01` : `${year}-${String(mon + 1).padStart(2, '0')}`;
    const startDay = promotionsGoalStart || `${month}-01`;
    const endLocal = promotionsGoalEnd ? addSeconds(`${promotionsGoalEnd} 00:00:00`, 86_400) : `${nextMonth}-01 00:00:00`;
    return { start: parseClientTimestamp(`${startDay} 00:00:00`, timezone)!, end: parseClientTimestamp(endLocal, timezone)! };
  }

  async communityGoal(): Promise<CommunityGoal> {
    const { promotionsGoalAmount, currency } = this.#settings.get();
    const { start, end } = this.#period();
    const target = promotionsGoalAmount * 100;
    const at = now();
    const raised = target > 0 ? await this.#store.revenueBetween(start, end) : 0;
    return { isActive: target > 0 && start <= at && at < end, currency, raised, target, start, end };
  }
}
