/**
 * The in-game listing's answer as JSON text, product by product. Game servers and players read the
 * whole catalogue again and again, and it seldom changes between two reads. A product's JSON
 * depends only on its row and variables, the site's time zone and its listing fields (its price
 * now, and whether the asking user may usefully buy it), all read or worked out afresh on every
 * listing; a product with all of them as in the last listing answers with the JSON it had then,
 * instead of being formatted and serialized again (docs/performance.md).
 */
import type { Static } from '@sinclair/typebox';
import type { JsonText } from '../../core/schema-compilers.ts';
import type { CategoryNode, Product, Variable } from './contract.ts';
import { categoryRow, listedFields, listingProduct, type Listed, type ListingCategory, type ListingContext } from './schemas.ts';

/** A product's JSON in the last listing, with what it was made from. */
interface Kept {
  product: Product;
  timeZone: string;
  listed: Listed;
  /** Its JSON in UTF-8: an answer is these put together, and the socket writes them as they are. */
  json: Buffer;
}

export type ListingAnswer = { categories: Static<typeof ListingCategory>[] };

/** Whether two reads of a product hold the same columns and variables (every column a string, number or boolean). */
function sameProduct(a: Product, b: Product): boolean {
  for (const key in a) {
    if (key !== 'variables' && a[key as keyof Product] !== b[key as keyof Product]) return false;
  }
  return sameVariables(a.variables, b.variables);
}

function sameVariables(a: Variable[], b: Variable[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((v, i) => {
    const w = b[i]!;
    return v.name === w.name && v.required === w.required && v.values.length === w.values.length && v.values.every((x, j) => x === w.values[j]);
  });
}

function sameListed(a: Listed, b: Listed): boolean {
  for (const key in a) {
    if (a[key as keyof Listed] !== b[key as keyof Listed]) return false;
  }
  return true;
}

const OPEN = Buffer.from('{"categories":[');
const COMMA = Buffer.from(',');
const PRODUCTS = Buffer.from('],"products":[');
const CLOSE = Buffer.from(']}');

export class ListingAnswers {
  /** The last listing's products by id: only they are held, so a product gone from the catalogue goes from here at the next listing. */
  #kept = new Map<number, Kept>();

  /** The listing of `tree` (the active catalogue) as the contract's JSON, in UTF-8. */
  answer(tree: CategoryNode[], ctx: ListingContext): JsonText<ListingAnswer> {
    const last = this.#kept;
    const next = new Map<number, Kept>();
    const parts: Buffer[] = [];
    let length = 0;
    const put = (part: Buffer) => {
      parts.push(part);
      length += part.length;
    };
    const list = <T>(items: T[], each: (item: T) => void) =>
      items.forEach((item, i) => {
        if (i > 0) put(COMMA);
        each(item);
      });
    const product = (p: Product) => {
      const listed = listedFields(p, ctx);
      let kept = last.get(p.id);
      if (kept === undefined || kept.timeZone !== ctx.timeZone || !sameListed(listed, kept.listed) || !sameProduct(p, kept.product)) {
        kept = { product: p, timeZone: ctx.timeZone, listed, json: Buffer.from(JSON.stringify(listingProduct(p, ctx.timeZone, listed))) };
      }
      next.set(p.id, kept);
      put(kept.json);
    };
    // A category is its row's JSON with its subcategories and products after its own fields, as JSON.stringify puts them.
    const category = (n: CategoryNode) => {
      put(Buffer.from(`${JSON.stringify(categoryRow(n)).slice(0, -1)},"subcategories":[`));
      list(n.subcategories, category);
      put(PRODUCTS);
      list(n.products, product);
      put(CLOSE);
    };
    put(OPEN);
    list(tree, category);
    put(CLOSE);
    this.#kept = next;
    return Buffer.concat(parts, length);
  }
}
