/**
 * The promotions' HTTP shapes: rows as the API shows them (every value a string, money `"12.50"`,
 * times in the site's zone, `""` for a window left open) and the admin bodies, checked loosely
 * where a form sends text, with what they mean to the service.
 */
import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, flag, formatMoney, MAX_CENTS, moneyNumber, parseClientTimestamp, requireMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { CommunityGoal } from './contract.ts';
import type { Coupon, GiftCard, LedgerRow, Sale } from './gift-cards.ts';
import type { CouponInput, Figures, SaleInput } from './service.ts';

const NONE: Figures = { uses: 0, amount: 0, revenue: 0 };
const int = (minimum: number, maximum = 2_147_483_647) => Type.Integer({ minimum, maximum });
const money = (description = 'decimal with at most two places') => S.decimalText({ description });
/** A time in the site's zone; empty leaves the window open on that side. */
const time = () => Type.String({ pattern: '^$|^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}(:\\d{2})?$', description: 'YYYY-MM-DD HH:MM[:SS] in the site time zone' });
/** Ids as a list, or as a form's text `3, 5`; empty = none. */
const idList = (description: string) =>
  Type.Union([Type.Array(int(1), { maxItems: 500 }), Type.String({ pattern: '^[0-9, ]*$', maxLength: 4000 })], { description });

const figures = {
  orders: S.str('orders that used it, refunds left out', '12'),
  discountGiven: S.moneyStr('decimal: what it took off those orders'),
  revenue: S.moneyStr('decimal: what those orders brought'),
};

export const CouponRow = Type.Object({
  id: S.idStr(),
  code: S.example('SUMMER10'),
  kind: S.str('percent or fixed', 'percent'),
  value: S.str('percent, or a decimal amount for fixed', '10'),
  minBasket: S.str('decimal; 0.00 = any basket', '0.00'),
  startDate: S.str('empty = from its creation', ''),
  endDate: S.str('empty = never ends', ''),
  maxUses: S.str('0 = unlimited', '100'),
  perPlayer: S.str('0 = unlimited', '1'),
  uses: S.str('uses taken', '3'),
  productIDs: Type.Array(S.idStr(), { description: 'empty: any product' }),
  categoryIDs: Type.Array(S.idStr(), { description: 'empty: any category' }),
  stacksWithSale: S.flagStr('1: it also lowers lines a sale lowers'),
  isActive: S.flagStr('0: paused'),
  creationDate: S.dateStr(),
  ...figures,
});

export const CouponBody = Type.Object({
  code: Type.String({ minLength: 3, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }),
  kind: Type.Union([Type.Literal('percent'), Type.Literal('fixed')]),
  value: money('a percent from 1 to 100, or a decimal amount for fixed'),
  minBasket: Type.Optional(money()),
  startDate: Type.Optional(time()),
  endDate: Type.Optional(time()),
  maxUses: Type.Optional(S.integerText({ description: '0 = unlimited' })),
  perPlayer: Type.Optional(S.integerText({ description: '0 = unlimited' })),
  productIDs: Type.Optional(idList('products it lowers; empty = any')),
  categoryIDs: Type.Optional(idList('categories it lowers; empty = any')),
  stacksWithSale: Type.Optional(S.boolish()),
  isActive: Type.Optional(S.boolish()),
});
export const CouponPatchBody = Type.Partial(CouponBody);

export const SaleRow = Type.Object({
  id: S.idStr(),
  name: S.example('Summer sale'),
  percent: S.example('20'),
  categoryIDs: Type.Array(S.idStr(), { description: 'empty: the whole store' }),
  startDate: S.dateStr(),
  endDate: S.dateStr(),
  isActive: S.flagStr('0: paused'),
  running: Type.Boolean({ description: 'active and between its dates now' }),
  creationDate: S.dateStr(),
  ...figures,
});
export const SaleBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  percent: S.integerText({ description: 'off the list price, 1 to 100' }),
  categoryIDs: Type.Optional(idList('categories on sale (their own products); empty = the whole store')),
  startDate: Type.String({ minLength: 1, maxLength: 19 }),
  endDate: Type.String({ minLength: 1, maxLength: 19 }),
  isActive: Type.Optional(S.boolish()),
});
export const SalePatchBody = Type.Partial(SaleBody);

export const GiftCardRow = Type.Object({
  id: S.idStr(),
  code: S.example('K7M2QX9RT4WB6PZA'),
  balance: S.moneyStr(),
  initialAmount: S.moneyStr(),
  isActive: S.flagStr('0: paused'),
  ownerID: S.str('the account that bought it; 0 = issued by staff', '0'),
  orderID: S.str('the order that bought it; 0 = none', '0'),
  note: S.example('prize of the build contest'),
  creationDate: S.dateStr(),
  uses: S.str('spends and redeems, refunds left out', '2'),
  spent: S.moneyStr('decimal: what left it, net of refunds'),
});
export const LedgerEntry = Type.Object({
  delta: S.str('decimal, negative when it left the card', '-5.00'),
  balance: S.moneyStr('decimal: after the movement'),
  reason: S.str('issue, purchase, spend, refund, redeem or void', 'spend'),
  orderID: S.strOrNull(undefined, '310'),
  userID: S.str(undefined, '7'),
  creationDate: S.dateStr(),
});
export const GiftCardBody = Type.Object({
  amount: money(),
  code: Type.Optional(Type.String({ maxLength: 64, description: 'empty: the server makes one' })),
  note: Type.Optional(Type.String({ maxLength: 255 })),
});
export const GiftCardPatchBody = Type.Object({ isActive: Type.Optional(S.boolish()), note: Type.Optional(Type.String({ maxLength: 255 })) });
export const GiftProductBody = Type.Object({ productID: int(1), amount: money('decimal: what a unit puts on the card') });
export const GiftProductRow = Type.Object({ productID: S.idStr(), amount: S.moneyStr() });
export const RedeemBody = Type.Object({ userID: S.integerText(), code: Type.String({ minLength: 1, maxLength: 64 }) });

/** What the LeaderOS game plugin reads (`GET store/community-goal`): snake_case numbers. */
export const CommunityGoalRow = Type.Object({
  is_active: Type.Boolean({ description: 'a target is set and the period runs now' }),
  currency: Type.String({ examples: ['USD'] }),
  total_raised: Type.Number({ description: 'real money received in the period (gateway purchases and top-ups)', examples: [312.5] }),
  goal_amount: Type.Number({ examples: [500] }),
  percentage_achieved: Type.Number({ description: 'may pass 100', examples: [62.5] }),
  start_date: Type.String({ description: 'YYYY-MM-DD HH:MM:SS in the site time zone', examples: ['2026-12-01 00:00:00'] }),
  end_date: Type.String({ description: 'the period ends before it', examples: ['2027-01-01 00:00:00'] }),
});

// ---- rows

const shownTime = (ts: string | null, timeZone: string) => (ts === null ? '' : displayTimestamp(ts, timeZone));
const idStrings = (json: string) => (JSON.parse(json) as number[]).map(String);
const figureCells = (f: Figures = NONE) => ({ orders: String(f.uses), discountGiven: formatMoney(f.amount), revenue: formatMoney(f.revenue) });

export function couponRow(c: Coupon, f: Figures | undefined, timeZone: string): Static<typeof CouponRow> {
  return {
    id: String(c.id),
    code: c.code,
    kind: c.kind,
    value: c.kind === 'percent' ? String(c.value) : formatMoney(c.value),
    minBasket: formatMoney(c.minBasket),
    startDate: shownTime(c.startDate, timeZone),
    endDate: shownTime(c.endDate, timeZone),
    maxUses: String(c.maxUses),
    perPlayer: String(c.perPlayer),
    uses: String(c.uses),
    productIDs: idStrings(c.productIds),
    categoryIDs: idStrings(c.categoryIds),
    stacksWithSale: flag(c.stacksWithSale),
    isActive: flag(c.isActive),
    creationDate: displayTimestamp(c.creationDate, timeZone),
    ...figureCells(f),
  };
}

export function saleRow(s: Sale, f: Figures | undefined, timeZone: string, at: string): Static<typeof SaleRow> {
  return {
    id: String(s.id),
    name: s.name,
    percent: String(s.percent),
    categoryIDs: idStrings(s.categoryIds),
    startDate: displayTimestamp(s.startDate, timeZone),
    endDate: displayTimestamp(s.endDate, timeZone),
    isActive: flag(s.isActive),
    running: s.isActive && s.startDate <= at && at < s.endDate,
    creationDate: displayTimestamp(s.creationDate, timeZone),
    ...figureCells(f),
  };
}

export function giftCardRow(c: GiftCard, f: Figures | undefined, timeZone: string): Static<typeof GiftCardRow> {
  return {
    id: String(c.id),
    code: c.code,
    balance: formatMoney(c.balance),
    initialAmount: formatMoney(c.initialAmount),
    isActive: flag(c.isActive),
    ownerID: String(c.ownerId),
    orderID: String(c.orderId),
    note: c.note,
    creationDate: displayTimestamp(c.creationDate, timeZone),
    uses: String(f?.uses ?? 0),
    spent: formatMoney(f?.amount ?? 0),
  };
}

export function ledgerEntry(l: LedgerRow, timeZone: string): Static<typeof LedgerEntry> {
  return {
    delta: formatMoney(l.delta),
    balance: formatMoney(l.balance),
    reason: l.reason,
    orderID: l.orderId === null ? null : String(l.orderId),
    userID: String(l.userId),
    creationDate: displayTimestamp(l.creationDate, timeZone),
  };
}

export function goalRow(g: CommunityGoal, timeZone: string): Static<typeof CommunityGoalRow> {
  return {
    is_active: g.isActive,
    currency: g.currency,
    total_raised: moneyNumber(g.raised),
    goal_amount: moneyNumber(g.target),
    percentage_achieved: g.target > 0 ? Math.round((g.raised * 10_000) / g.target) / 100 : 0,
    start_date: displayTimestamp(g.start, timeZone),
    end_date: displayTimestamp(g.end, timeZone),
  };
}

// ---- bodies as the service takes them

/** Cents of a decimal field, at most the price column's range. */
export function cents(value: unknown, field: string, min = 0): number {
  const amount = requireMoney(value, 'VALIDATION_ERROR', field);
  if (amount < min || amount > MAX_CENTS)
    throw new DomainError('VALIDATION_ERROR', `${field} must be between ${formatMoney(min)} and ${formatMoney(MAX_CENTS)}.`);
  return amount;
}

function count(value: unknown, field: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const text = String(value).trim();
  if (!/^[0-9]{1,9}$/.test(text)) throw new DomainError('VALIDATION_ERROR', `${field} must be a whole number, 0 for unlimited.`);
  return Number(text);
}

function idsJson(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value.map(Number) : String(value).split(/[ ,]+/).filter(Boolean).map(Number);
  return JSON.stringify([...new Set(list)]);
}

/** A client's time in the site's zone to a stored one; empty = none. */
function storedTime(value: string | undefined, field: string, timeZone: string): string | null | undefined {
  if (value === undefined) return undefined;
  if (value === '') return null;
  const stored = parseClientTimestamp(value.length === 16 ? `${value}:00` : value, timeZone);
  if (!stored) throw new DomainError('VALIDATION_ERROR', `${field}: use the form 2026-12-31 23:59.`);
  return stored;
}

const bool = (v: unknown) => (v === undefined ? undefined : S.toBool(v));

export function couponInput(b: Static<typeof CouponPatchBody>, timeZone: string, kindNow?: 'percent' | 'fixed'): Partial<CouponInput> {
  const kind = b.kind ?? kindNow;
  let value: number | undefined;
  if (b.value !== undefined) {
    if (kind === 'percent') {
      value = Number(b.value);
      if (!Number.isInteger(value) || value < 1 || value > 100) throw new DomainError('VALIDATION_ERROR', 'value: a whole percent from 1 to 100.');
    } else value = cents(b.value, 'value', 1);
  }
  return {
    code: b.code,
    kind: b.kind,
    value,
    minBasket: b.minBasket === undefined || b.minBasket === '' ? undefined : cents(b.minBasket, 'minBasket'),
    startDate: storedTime(b.startDate, 'startDate', timeZone),
    endDate: storedTime(b.endDate, 'endDate', timeZone),
    maxUses: count(b.maxUses, 'maxUses'),
    perPlayer: count(b.perPlayer, 'perPlayer'),
    productIds: idsJson(b.productIDs),
    categoryIds: idsJson(b.categoryIDs),
    stacksWithSale: bool(b.stacksWithSale),
    isActive: bool(b.isActive),
  };
}

export const COUPON_DEFAULTS = {
  minBasket: 0,
  startDate: null,
  endDate: null,
  maxUses: 0,
  perPlayer: 0,
  productIds: '[]',
  categoryIds: '[]',
  // Owners expect a code they hand out to work during a sale too: it lowers the sale price further.
  stacksWithSale: true,
  isActive: true,
};

export function saleInput(b: Static<typeof SalePatchBody>, timeZone: string): Partial<SaleInput> {
  let percent: number | undefined;
  if (b.percent !== undefined) {
    percent = Number(b.percent);
    if (!Number.isInteger(percent) || percent < 1 || percent > 100) throw new DomainError('VALIDATION_ERROR', 'percent: a whole percent from 1 to 100.');
  }
  const when = (v: string | undefined, field: string) => {
    const stored = storedTime(v, field, timeZone);
    if (stored === null) throw new DomainError('VALIDATION_ERROR', `${field} is required: use the form 2026-12-31 23:59.`);
    return stored;
  };
  return {
    name: b.name,
    percent,
    categoryIds: idsJson(b.categoryIDs),
    startDate: when(b.startDate, 'startDate'),
    endDate: when(b.endDate, 'endDate'),
    isActive: bool(b.isActive),
  };
}
