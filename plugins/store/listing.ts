/**
 * The in-game listing's answer as JSON text, product by product. Game servers and players read the
 * whole catalogue again and again, and it seldom changes between two reads. A product's JSON
 * depends only on its row and variables, the site's time zone and its listing fields (its price
 * now, and whether the asking user may usefully buy it), all read or worked out afresh on every
 * listing; a product with all of them as in the last listing answers with the JSON it had then,
 * instead of being formatted and serialized again. Kept in UTF-8, the parts are put together in one
 * copy, and a listing made of the very parts of the last one answers the same bytes without even
 * that: a new big buffer on every read cost more in collection than the copy (docs/performance.md).
 */
import type { Static } from '@sinclair/typebox';
import { sameFields } from '../../core/json-parts.ts';
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
  /** The listing it was last in (ListingAnswers counts them): one it is not in drops it. */
  seen: number;
}

type ListingAnswer = { categories: Static<typeof ListingCategory>[] };

function sameVariables(a: Variable[], b: Variable[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((v, i) => {
    const w = b[i]!;
    return v.name === w.name && v.required === w.required && v.values.length === w.values.length && v.values.every((x, j) => x === w.values[j]);
  });
}

/** Whether two reads of a product hold the same columns and variables. */
const sameProduct = (a: Product, b: Product) => sameFields(a, b, 'variables') && sameVariables(a.variables, b.variables);

const OPEN = Buffer.from('{"categories":[');
const COMMA = Buffer.from(',');
const PRODUCTS = Buffer.from('],"products":[');
const CLOSE = Buffer.from(']}');

export class ListingAnswers {
  /** The products of the last listing by id, each with the listing it was last in. */
  readonly #products = new Map<number, Kept>();
  /** Each category's JSON up to its subcategories in the last listing, as text and in UTF-8. */
  #heads = new Map<number, { text: string; bytes: Buffer }>();
  /** The last answer and the parts it was put together from: the same parts in the same order answer the same bytes. */
  #answer: { parts: Buffer[]; bytes: Buffer } | undefined;
  #listings = 0;

  /** The listing of `tree` (the active catalogue) as the contract's JSON, in UTF-8. */
  answer(tree: CategoryNode[], ctx: ListingContext): JsonText<ListingAnswer> {
    const listing = ++this.#listings;
    const heads = new Map<number, { text: string; bytes: Buffer }>();
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
    let count = 0;
    const product = (p: Product) => {
      const fields = listedFields(p, ctx);
      let kept = this.#products.get(p.id);
      if (kept === undefined || kept.timeZone !== ctx.timeZone || !sameFields(fields, kept.listed) || !sameProduct(p, kept.product)) {
        const json = Buffer.from(JSON.stringify(listingProduct(p, ctx.timeZone, fields)));
        kept = { product: p, timeZone: ctx.timeZone, listed: fields, json, seen: listing };
        this.#products.set(p.id, kept);
      }
      kept.seen = listing;
      count++;
      put(kept.json);
    };
    // A category is its row's JSON with its subcategories and products after its own fields, as JSON.stringify puts them.
    const category = (n: CategoryNode) => {
      const text = `${JSON.stringify(categoryRow(n)).slice(0, -1)},"subcategories":[`;
      const last = this.#heads.get(n.id);
      const head = last?.text === text ? last : { text, bytes: Buffer.from(text) };
      heads.set(n.id, head);
      put(head.bytes);
      list(n.subcategories, category);
      put(PRODUCTS);
      list(n.products, product);
      put(CLOSE);
    };
    put(OPEN);
    list(tree, category);
    put(CLOSE);
    this.#heads = heads;
    if (this.#products.size > count) {
      for (const [id, kept] of this.#products) if (kept.seen !== listing) this.#products.delete(id);
    }
    const last = this.#answer;
    if (last?.parts.length === parts.length && last.parts.every((part, i) => part === parts[i])) return last.bytes;
    this.#answer = { parts, bytes: Buffer.concat(parts, length) };
    return this.#answer.bytes;
  }
}
