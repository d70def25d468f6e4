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
import { JsonParts, KeptJson, LastAnswer, sameFields } from '../../core/json-parts.ts';
import type { JsonText } from '../../core/schema-compilers.ts';
import type { CategoryNode, Product, Variable } from './contract.ts';
import { categoryRow, listedFields, listingProduct, type Listed, type ListingCategory, type ListingContext } from './schemas.ts';

/** What a product's JSON in the listing is made from. */
interface Listing {
  product: Product;
  timeZone: string;
  listed: Listed;
}

type ListingAnswer = { categories: Static<typeof ListingCategory>[] };

function sameVariables(a: Variable[], b: Variable[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((v, i) => {
    const w = b[i]!;
    return v.name === w.name && v.required === w.required && v.values.length === w.values.length && v.values.every((x, j) => x === w.values[j]);
  });
}

/** Whether two listings of a product are made from the same columns, variables, time zone and listing fields. */
const sameListing = (a: Listing, b: Listing) =>
  a.timeZone === b.timeZone &&
  sameFields(a.listed, b.listed) &&
  sameFields(a.product, b.product, 'variables') &&
  sameVariables(a.product.variables, b.product.variables);

const OPEN = Buffer.from('{"categories":[');
const PRODUCTS = Buffer.from('],"products":[');
const CLOSE = Buffer.from(']}');

export class ListingAnswers {
  /** The products of the last listing by id. */
  readonly #products = new KeptJson<number, Listing>(sameListing, (l) => JSON.stringify(listingProduct(l.product, l.timeZone, l.listed)));
  /** Each category's JSON up to its subcategories in the last listing, as text and in UTF-8. */
  #heads = new Map<number, { text: string; bytes: Buffer }>();
  readonly #answer = new LastAnswer();

  /** The listing of `tree` (the active catalogue) as the contract's JSON, in UTF-8. */
  answer(tree: CategoryNode[], ctx: ListingContext): JsonText<ListingAnswer> {
    const heads = new Map<number, { text: string; bytes: Buffer }>();
    const parts = new JsonParts();
    const product = (p: Product) => parts.put(this.#products.json(p.id, { product: p, timeZone: ctx.timeZone, listed: listedFields(p, ctx) }));
    // A category is its row's JSON with its subcategories and products after its own fields, as JSON.stringify puts them.
    const category = (n: CategoryNode) => {
      const text = `${JSON.stringify(categoryRow(n)).slice(0, -1)},"subcategories":[`;
      const last = this.#heads.get(n.id);
      const head = last?.text === text ? last : { text, bytes: Buffer.from(text) };
      heads.set(n.id, head);
      parts.put(head.bytes);
      parts.list(n.subcategories, category);
      parts.put(PRODUCTS);
      parts.list(n.products, product);
      parts.put(CLOSE);
    };
    parts.put(OPEN);
    parts.list(tree, category);
    parts.put(CLOSE);
    this.#heads = heads;
    this.#products.done();
    return this.#answer.bytes(parts);
  }
}
