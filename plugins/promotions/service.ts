/**
 * Promotions as staff keep them: coupons, gift cards (issued, paused, redeemed onto the credit
 * balance) and sales, with their figures, and the community goal. What promotions do during a buy
 * is buy.ts, the store checkout's participant; a change here that it holds in memory (a sale, a
 * gift-card product) reloads it at once.
 */
import type { AuditLog } from '../../core/audit.ts';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { count, fields, raw, sql, sum, typed } from '../../core/sql.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, displayTimestamp, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { StoreCatalogue, StoreOrders } from '../store/contract.ts';
import type { PromotionsInBuy } from './buy.ts';
import type { CommunityGoal, PromotionsService, RunningSale } from './contract.ts';
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
import { findCard, invalid, issueCard, usedUp, writeLedger, type Coupon, type GiftCard, type LedgerRow, type Sale } from './gift-cards.ts';

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

const CODE = /^[A-Za-z0-9_-]{3,64}$/;

const Co = PromotionsCoupon.c;
const Pl = PromotionsCouponPlayer.c;
const Use = PromotionsCouponUse.c;
const Card = PromotionsGiftCard.c;
const Led = PromotionsGiftCardLedger.c;
const Sa = PromotionsSale.c;
const SaUse = PromotionsSaleUse.c;
const GP = PromotionsGiftCardProduct.c;

export interface PromotionsDeps {
  db: Database;
  settings: SettingsService;
  catalogue: StoreCatalogue;
  orders: StoreOrders;
  credits: CreditsService;
  /** The buy's part, whose memory a change of sales or gift-card products reloads. */
  inBuy: PromotionsInBuy;
  /** Characters of a gift card code made by the server. */
  codeLength: number;
  audit: AuditLog;
}

export class DbPromotionsService implements PromotionsService {
  readonly #db: Database;
  readonly #settings: SettingsService;
  readonly #catalogue: StoreCatalogue;
  readonly #orders: StoreOrders;
  readonly #credits: CreditsService;
  readonly #inBuy: PromotionsInBuy;
  readonly #codeLength: number;
  readonly #audit: AuditLog;

  constructor(deps: PromotionsDeps) {
    this.#db = deps.db;
    this.#settings = deps.settings;
    this.#catalogue = deps.catalogue;
    this.#orders = deps.orders;
    this.#credits = deps.credits;
    this.#inBuy = deps.inBuy;
    this.#codeLength = deps.codeLength;
    this.#audit = deps.audit;
  }

  /** A staff change's audit entry, in its transaction (`what`: `coupon`, `sale`, `giftcard`, `giftproduct`). */
  #record(what: string, verb: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `promotions.${what}.${verb}`, target: { type: what, id }, summary, before, after });
  }

  // ---- gift cards

  async issueCard(input: { amount: number; code?: string; note?: string }): Promise<GiftCard> {
    if (input.code !== undefined && !CODE.test(input.code)) throw new DomainError('VALIDATION_ERROR', 'code: 3 to 64 letters, digits, _ or -.');
    return this.#db.transaction(async () => {
      const card = await issueCard(this.#db, this.#codeLength, {
        amount: input.amount,
        code: input.code,
        note: input.note ?? '',
        ownerId: 0,
        orderId: 0,
        reason: 'issue',
      });
      await this.#record('giftcard', 'issue', card.id, `Issued gift card ${card.code} (${formatMoney(card.initialAmount)})`, undefined, card);
      return card;
    });
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
    const card = await findCard(this.#db, code);
    if (!card) throw new DomainError('GIFT_CARD_NOT_FOUND', `No gift card ${code}.`);
    return card;
  }

  async updateCard(id: number, patch: { isActive?: boolean; note?: string }): Promise<GiftCard> {
    return this.#db.transaction(async () => {
      const before = await this.requireCard(id);
      await PromotionsGiftCard.update(this.#db, id, patch);
      const after = await this.requireCard(id);
      await this.#record('giftcard', 'update', id, `Changed gift card ${after.code}${after.isActive ? '' : ' (paused)'}`, before, after);
      return after;
    });
  }

  /** A card never used is deleted; one with movements is kept for its ledger (CONFLICT: pause it instead). */
  async deleteCard(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const card = await this.requireCard(id);
      const moves = await PromotionsGiftCardLedger.select(this.#db, sql`where ${Led.cardId} = ${id}`);
      if (moves.length > 1) throw new DomainError('CONFLICT', `The gift card ${card.code} has been used: pause it instead.`);
      await this.#db.run(sql`delete from ${PromotionsGiftCardLedger} where ${Led.cardId} = ${id}`);
      await this.#db.run(sql`delete from ${PromotionsGiftCard} where ${Card.id} = ${id}`);
      await this.#record('giftcard', 'delete', id, `Deleted gift card ${card.code}`, card);
    });
  }

  async ledgerOf(cardId: number): Promise<LedgerRow[]> {
    return PromotionsGiftCardLedger.select(this.#db, sql`where ${Led.cardId} = ${cardId} order by ${Led.id}`);
  }

  async redeemGiftCard(userId: number, code: string): Promise<number> {
    return this.#db.transaction(async () => {
      const card = await findCard(this.#db, code.trim());
      if (!card?.isActive) throw invalid(`code: there is no gift card ${code} in use.`);
      if (card.balance <= 0) throw invalid(`code: the gift card ${card.code} has no balance left.`);
      // Only from the balance read: a spend or redeem in between changes it, and this one then does nothing.
      const { affectedRows } = await this.#db.run(sql`update ${PromotionsGiftCard} set ${Card.balance} = 0
        where ${Card.id} = ${card.id} and ${Card.balance} = ${card.balance}`);
      if (affectedRows === 0) throw usedUp(`code: the gift card ${card.code} was used meanwhile; try again.`);
      await this.#credits.change(userId, card.balance, { reason: 'gift-card' });
      await writeLedger(this.#db, { ...card, balance: 0 }, -card.balance, 'redeem', null, userId, now());
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
    if (!(await this.#catalogue.productName(productId))) throw new DomainError('PRODUCT_NOT_FOUND', `productID: no product with ID ${productId}.`);
    await this.#db.transaction(async () => {
      await this.#db.run(sql`delete from ${PromotionsGiftCardProduct} where ${GP.productId} = ${productId}`);
      await PromotionsGiftCardProduct.insert(this.#db, { productId, amount });
      await this.#record('giftproduct', 'set', productId, `Product ${productId} sells a gift card of ${formatMoney(amount)}`, undefined, { productId, amount });
    });
    await this.#inBuy.reload();
  }

  async removeGiftProduct(productId: number): Promise<void> {
    await this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(sql`delete from ${PromotionsGiftCardProduct} where ${GP.productId} = ${productId}`);
      if (affectedRows === 0) throw new DomainError('PRODUCT_NOT_FOUND', `Product ${productId} sells no gift card.`);
      await this.#record('giftproduct', 'remove', productId, `Product ${productId} sells no gift card any more`);
    });
    await this.#inBuy.reload();
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
      return await this.#db.transaction(async () => {
        const made = { id: await PromotionsCoupon.insert(this.#db, coupon), ...coupon };
        await this.#record('coupon', 'create', made.id, `Created coupon ${made.code}`, undefined, made);
        return made;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a coupon ${input.code} exists already (codes are case-insensitive).`);
      throw err;
    }
  }

  async updateCoupon(id: number, patch: Partial<CouponInput>): Promise<Coupon> {
    const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<CouponInput>;
    try {
      return await this.#db.transaction(async () => {
        const before = await this.requireCoupon(id);
        this.#checkCoupon({ ...before, ...changes });
        await PromotionsCoupon.update(this.#db, id, changes.code === undefined ? changes : { ...changes, codeKey: changes.code.toLowerCase() });
        const after = await this.requireCoupon(id);
        await this.#record('coupon', 'update', id, `Changed coupon ${after.code}${after.isActive ? '' : ' (paused)'}`, before, after);
        return after;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `code: a coupon ${changes.code} exists already (codes are case-insensitive).`);
      throw err;
    }
  }

  async deleteCoupon(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const coupon = await this.requireCoupon(id);
      await this.#db.run(sql`delete from ${PromotionsCouponPlayer} where ${Pl.couponId} = ${id}`);
      await this.#db.run(sql`delete from ${PromotionsCoupon} where ${Co.id} = ${id}`);
      await this.#record('coupon', 'delete', id, `Deleted coupon ${coupon.code}`, coupon);
    });
  }

  /** Uses, money off and revenue of each promotion of a kind, by its id: orders not refunded. */
  async figures(kind: 'coupon' | 'sale' | 'card'): Promise<Map<number, Figures>> {
    const statement =
      kind === 'card'
        ? sql`select ${fields({ id: Led.cardId, n: count(), amount: typed<number | string | null>(sql`-sum(${Led.delta})`), revenue: typed<number>(raw('0')) })}
          from ${PromotionsGiftCardLedger} where ${Led.reason} in ('spend', 'redeem', 'refund') group by ${Led.cardId}`
        : kind === 'coupon'
          ? sql`select ${fields({ id: Use.couponId, n: count(), amount: sum(Use.amount), revenue: sum(Use.revenue) })} from ${PromotionsCouponUse}
            where ${Use.status} = 'used' group by ${Use.couponId}`
          : sql`select ${fields({ id: SaUse.saleId, n: count(), amount: sum(SaUse.amount), revenue: sum(SaUse.revenue) })} from ${PromotionsSaleUse}
            where ${SaUse.status} = 'used' group by ${SaUse.saleId}`;
    const rows = await this.#db.query(statement);
    return new Map(rows.map((r) => [Number(r.id), { uses: Number(r.n), amount: Number(r.amount ?? 0), revenue: Number(r.revenue ?? 0) }]));
  }

  // ---- sales

  async sales(): Promise<Sale[]> {
    return PromotionsSale.select(this.#db, sql`order by ${Sa.id} desc`);
  }

  async runningSales(at: string): Promise<RunningSale[]> {
    const rows = await PromotionsSale.select(
      this.#db,
      sql`where ${Sa.isActive} = 1 and ${Sa.startDate} <= ${at} and ${Sa.endDate} > ${at} order by ${Sa.percent} desc, ${Sa.id}`,
    );
    return rows.map((s) => ({ name: s.name, percent: s.percent, endDate: s.endDate, categoryIds: JSON.parse(s.categoryIds) as number[] }));
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
    const made = await this.#db.transaction(async () => {
      const sale = { ...input, creationDate: now() };
      const id = await PromotionsSale.insert(this.#db, sale);
      await this.#record('sale', 'create', id, `Created sale ${sale.name} (${sale.percent}% off)`, undefined, { id, ...sale });
      return { id, ...sale };
    });
    await this.#inBuy.reload();
    return made;
  }

  async updateSale(id: number, patch: Partial<SaleInput>): Promise<Sale> {
    const changes = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<SaleInput>;
    const after = await this.#db.transaction(async () => {
      const before = await this.requireSale(id);
      this.#checkSale({ ...before, ...changes });
      await PromotionsSale.update(this.#db, id, changes);
      const saved = await this.requireSale(id);
      await this.#record('sale', 'update', id, `Changed sale ${saved.name}${saved.isActive ? '' : ' (paused)'}`, before, saved);
      return saved;
    });
    await this.#inBuy.reload();
    return after;
  }

  async deleteSale(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const sale = await this.requireSale(id);
      await this.#db.run(sql`delete from ${PromotionsSale} where ${Sa.id} = ${id}`);
      await this.#record('sale', 'delete', id, `Deleted sale ${sale.name}`, sale);
    });
    await this.#inBuy.reload();
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
    const raised = target > 0 ? await this.#orders.revenueBetween(start, end) : 0;
    return { isActive: target > 0 && start <= at && at < end, currency, raised, target, start, end };
  }
}
