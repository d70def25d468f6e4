/**
 * What the storefront shows of the store: product and category views made from the store
 * contract's catalogue (active only), the description sanitised, prices as the buy computes them.
 */
import sanitizeHtml from 'sanitize-html';
import { PERMANENT } from '../../core/format.ts';
import {
  effectivePrice,
  shownCategoryMap,
  type CategoryNode,
  type PricedProduct,
  type Product,
  type PurchaseRules,
  type ShownCategory,
  type ShownProduct,
} from '../store/contract.ts';
import type { MessageKey, Translate } from './messages.ts';
import type { Visit } from './site.ts';

export interface ProductView {
  id: number;
  name: string;
  /** What the buy would charge for one now, in cents. */
  cents: number;
  price: string;
  /** The price before the discount, while one runs. */
  was?: string;
  /** When the discount ends (none for a permanent one). */
  until?: string;
  soldOut: boolean;
  /** Units left, when the stock is limited. */
  stock?: number;
  image?: string;
  variables: Product['variables'];
  details: string;
}

/** Admin HTML, kept to text formatting, lists, links and images; sanitised once per text (bounded). */
const SANITISED = new Map<string, string>();
const SANITISED_MAX = 2000;
const ALLOWED: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img'],
  allowedAttributes: { a: ['href', 'title'], img: ['src', 'alt', 'width', 'height'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  transformTags: { a: sanitizeHtml.simpleTransform('a', { rel: 'nofollow noopener' }) },
};

const PLAIN = new Map<string, string>();

function remembered(cache: Map<string, string>, key: string, make: () => string): string {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size >= SANITISED_MAX) cache.clear();
    cache.set(key, value);
  }
  return value;
}

export function sanitise(html: string): string {
  return remembered(SANITISED, html, () => sanitizeHtml(html, ALLOWED));
}

/** The description as plain text (a page's meta description): no tag, nor the text of a script or style. */
export function plainText(html: string, max: number): string {
  return remembered(PLAIN, html, () => sanitizeHtml(html, { allowedTags: [], allowedAttributes: {} }).replace(/\s+/g, ' ').trim()).slice(0, max);
}

export class Catalogue {
  readonly #imageUrl: (p: ShownProduct) => string | undefined;
  readonly #unitPrice: (p: PricedProduct, at: string) => number;

  /** `unitPrice`: the store's, a running sale included. */
  constructor(imageUrl: (p: ShownProduct) => string | undefined, unitPrice: (p: PricedProduct, at: string) => number) {
    this.#imageUrl = imageUrl;
    this.#unitPrice = unitPrice;
  }

  product(visit: Visit, p: ShownProduct, withDetails = false): ProductView {
    const price = this.#unitPrice(p, visit.at);
    const discounted = price !== p.price;
    // The end is the product's own discount's, when that is the price shown (a sale's page says its own).
    const ownDiscount = price === effectivePrice(p, visit.at) && p.discountExpiryDate !== PERMANENT;
    return {
      id: p.id,
      name: p.name,
      cents: price,
      price: visit.money(price),
      soldOut: p.stock === 0,
      variables: p.variables,
      ...(discounted ? { was: visit.money(p.price) } : {}),
      ...(discounted && ownDiscount ? { until: visit.date(p.discountExpiryDate) } : {}),
      ...(p.stock > 0 ? { stock: p.stock } : {}),
      image: this.#imageUrl(p),
      details: withDetails ? sanitise(p.details) : '',
    };
  }
}

/** Every product of a tree, depth first, in the catalogue's order. */
export function allProducts(nodes: CategoryNode[]): Product[] {
  return nodes.flatMap((n) => [...n.products, ...allProducts(n.subcategories)]);
}

/** The categories a player sees: active, and every one above them active too (ordered as given): the store's rule of what is for sale. */
export function visibleCategories<C extends ShownCategory>(active: C[]): ReadonlyMap<number, C> {
  return shownCategoryMap(active);
}

/** The path from a top-level category to the category `id` (both included), or undefined when it is not shown. */
export function pathTo<C extends ShownCategory>(visible: ReadonlyMap<number, C>, id: number): C[] | undefined {
  const path: C[] = [];
  for (let c = visible.get(id); c; c = c.parentId === 0 ? undefined : visible.get(c.parentId)) {
    path.unshift(c);
    if (path.length > 64) return undefined;
  }
  return path.length ? path : undefined;
}

/** The purchase rules in words, before the player tries. */
export function rulesText(t: Translate, rules: PurchaseRules, requiredName: string | undefined): string[] {
  const out: string[] = [];
  const say = (key: MessageKey, values?: Record<string, string>) => out.push(t(key, values));
  if (rules.requiredProductId > 0 && requiredName) say('product.rule.required', { name: requiredName });
  if (rules.requireLinkedAccount) say('product.rule.linked');
  if (rules.preventDowngrade) say('product.rule.downgrade');
  return out;
}
