/**
 * The basket, kept in a cookie of its own: product ids, quantities and the variables chosen,
 * never prices (the buy reads them from the catalogue). Whatever the cookie holds is checked on
 * the way in: a line that does not parse is dropped.
 */
import { hasControlCharacter } from '../../core/format.ts';

export interface BasketLine {
  productId: number;
  quantity: number;
  variables: Record<string, string>;
}

export const BASKET_COOKIE = 'storefront_basket';
/** The most of one product a line may hold: what the store's buy accepts. */
export const MAX_QUANTITY = 100;
const MAX_VARIABLES = 20;
const MAX_VALUE = 255;

export function parseQuantity(text: string | undefined): number | undefined {
  const n = /^[0-9]{1,3}$/.test((text ?? '').trim()) ? Number(text!.trim()) : 0;
  return n >= 1 && n <= MAX_QUANTITY ? n : undefined;
}

function lineOf(raw: unknown): BasketLine | undefined {
  if (!Array.isArray(raw) || raw.length !== 3) return undefined;
  const [productId, quantity, variables] = raw as [unknown, unknown, unknown];
  if (!Number.isSafeInteger(productId) || (productId as number) < 1) return undefined;
  if (!Number.isInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_QUANTITY) return undefined;
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) return undefined;
  const entries = Object.entries(variables);
  // A control character never comes from the add form: such a line was written by hand.
  if (entries.length > MAX_VARIABLES || entries.some(([k, v]) => typeof v !== 'string' || v.length > MAX_VALUE || k.length > 64 || hasControlCharacter(v)))
    return undefined;
  return { productId: productId as number, quantity: quantity as number, variables: Object.fromEntries(entries) as Record<string, string> };
}

export function readBasket(cookie: string | undefined, maxLines: number): BasketLine[] {
  if (!cookie) return [];
  try {
    const raw: unknown = JSON.parse(Buffer.from(cookie, 'base64url').toString('utf8'));
    if (!Array.isArray(raw)) return [];
    return raw
      .slice(0, maxLines)
      .map(lineOf)
      .filter((l): l is BasketLine => l !== undefined);
  } catch {
    return [];
  }
}

export function writeBasket(lines: BasketLine[]): string {
  return Buffer.from(JSON.stringify(lines.map((l) => [l.productId, l.quantity, l.variables]))).toString('base64url');
}

/** The coupon and gift card codes typed at the basket, kept in a cookie of their own until the basket is paid. */
export const CODES_COOKIE = 'storefront_codes';
export interface BasketCodes {
  coupon?: string;
  giftCard?: string;
}
const CODE = /^[A-Za-z0-9_-]{1,64}$/;

/** A code as typed, or undefined when it cannot be one (it is then not sent). */
export function codeOf(text: string | undefined): string | undefined {
  const code = (text ?? '').trim();
  return CODE.test(code) ? code : undefined;
}

export function readCodes(cookie: string | undefined): BasketCodes {
  const [coupon, giftCard] = (cookie ?? '').split('.');
  return { coupon: codeOf(coupon), giftCard: codeOf(giftCard) };
}

export function writeCodes(codes: BasketCodes): string {
  return `${codes.coupon ?? ''}.${codes.giftCard ?? ''}`;
}

const sameVariables = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

/** Adds a line, or adds its quantity to the line of the same product and variables (at most MAX_QUANTITY); undefined when the basket is full. */
export function addLine(lines: BasketLine[], line: BasketLine, maxLines: number): BasketLine[] | undefined {
  const same = lines.findIndex((l) => l.productId === line.productId && sameVariables(l.variables, line.variables));
  if (same >= 0) return lines.map((l, i) => (i === same ? { ...l, quantity: Math.min(MAX_QUANTITY, l.quantity + line.quantity) } : l));
  return lines.length >= maxLines ? undefined : [...lines, line];
}
