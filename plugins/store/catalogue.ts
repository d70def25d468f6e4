/**
 * The store's catalogue: nested categories, products and their variables, the catalogue tree, the
 * one rule of what is for sale (judgeCategories), and each product's purchase rules. Plain data
 * in, money in cents and times as stored UTC text; each write is one transaction.
 */
import type { AuditLog } from '../../core/audit.ts';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, now } from '../../core/format.ts';
import { fields, sql, typed, where, type Sql } from '../../core/sql.ts';
import { joined } from '../../core/table.ts';
import type { UsersService } from '../users/contract.ts';
import type { Category, CategoryNode, Product, PurchaseRules, ShownCategory, ShownProduct, StoreCatalogue, Variable } from './contract.ts';
import { judgeCategories, shownCategoryMap } from './contract.ts';
import { StoreCategory, StoreProduct, StoreProductRule, StoreProductVariable } from './entities.ts';

export type CategoryInput = Partial<Omit<Category, 'id'>>;
export type ProductInput = Partial<Omit<Product, 'id' | 'creationDate'>>;

const C = StoreCategory.c;
const P = StoreProduct.c;
const V = StoreProductVariable.c;
const p = StoreProduct.as('p');
const r = StoreProductRule.as('r');
const v = StoreProductVariable.as('v');

/** Priority first, then age: the order of every list (decisions.md §5). */
const CATEGORY_ORDER = sql`order by ${C.priority}, ${C.id}`;
const PRODUCT_ORDER = sql`${p.c.priority}, ${p.c.id}`;
/** A product for sale with its purchase rules, by a left join: undefined rules where it has none. */
const FOR_SALE = joined({ product: p, rules: r.optional() });
/** What decides whether a category is on show (judgeCategories). */
const CATEGORY_FLAGS = StoreCategory.pick('id', 'parentId', 'isActive');
/** A product's own category, joined into a buy's read of it: the id null where the category is gone. */
const pc = StoreCategory.as('pc');
const OWN_CATEGORY = pc.pick('id', 'parentId', 'isActive');
const ACTIVE_PRODUCT = sql`${p.c.isActive} = 1`;
/** A product's variable: first in each row of a read of products that joins them (`#withVariables`), or read alone (`#everyProduct`). */
const VARIABLE = v.pick('productId', 'name', 'required', 'allowedValues', 'position');
/** A VARIABLE row as the product it belongs to, its position and the variable as the contract has it. */
function readVariable(row: unknown[]): { productId: number; position: number; variable: Variable } {
  const { productId, position, name, required, allowedValues } = VARIABLE.fromArray(row);
  return { productId, position, variable: { name, required, values: JSON.parse(allowedValues) as string[] } };
}
/** The columns a page of the catalogue shows (the storefront's): its pages read no others. */
const SHOWN_CATEGORY = StoreCategory.pick('id', 'parentId', 'name', 'slug', 'gameDescription');
const SHOWN_PRODUCT = p.pick('id', 'categoryId', 'name', 'imageId', 'imageType', 'details', 'price', 'discountedPrice', 'discountExpiryDate', 'stock');

/** A slug from a name: `VIP Ranks!` → `vip-ranks`. */
function slugify(name: string): string {
  return (
    name
      .normalize('NFKD')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 128) || 'category'
  );
}

const CATEGORY_DEFAULTS: Omit<Category, 'id' | 'name' | 'slug'> = {
  parentId: 0,
  imageId: '',
  imageType: '',
  priority: 0,
  gameStatus: true,
  gameTitle: '',
  gameDescription: '',
  gameItem: '',
  isActive: true,
};

const PRODUCT_DEFAULTS: Omit<Product, 'id' | 'categoryId' | 'name' | 'price' | 'creationDate'> = {
  giveRoleId: 0,
  imageId: '',
  imageType: '',
  details: '',
  discountedPrice: 0,
  discountExpiryDate: PERMANENT,
  duration: 0,
  stock: -1,
  priority: 0,
  isFeatured: false,
  gameStatus: true,
  gameTitle: '',
  gameDescription: '',
  gameItem: '',
  isActive: true,
  variables: [],
};

function invalid(message: string): DomainError {
  return new DomainError('VALIDATION_ERROR', message);
}

/** Drops the keys a partial update leaves out, so they do not overwrite stored values. */
function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const NONE: PurchaseRules = { requiredProductId: 0, requireLinkedAccount: false, preventDowngrade: false };

/** The distinct ids a product can have (positive safe integers): the others match no row, so no statement asks for them. */
function productIds(ids: number[]): number[] {
  return [...new Set(ids.filter((id) => Number.isSafeInteger(id) && id > 0))];
}

/** A product for sale with its purchase rules: what a buy checks a line against. */
export interface ForSale {
  product: Product;
  rules: PurchaseRules;
}

export class DbCatalogue implements StoreCatalogue {
  readonly #db: Database;
  readonly #users: UsersService;
  readonly #audit: AuditLog;

  constructor(deps: { db: Database; users: UsersService; audit: AuditLog }) {
    this.#db = deps.db;
    this.#users = deps.users;
    this.#audit = deps.audit;
  }

  // ---- categories

  async categories(activeOnly = false): Promise<Category[]> {
    return StoreCategory.select(this.#db, sql`${where(activeOnly && sql`${C.isActive} = 1`)} ${CATEGORY_ORDER}`);
  }

  async requireCategory(id: number): Promise<Category> {
    const category = await StoreCategory.find(this.#db, id);
    if (!category) throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${id}.`);
    return category;
  }

  /** A staff change's audit entry, in its transaction (`what`: `category.create`, `products.reorder`). */
  #entry(what: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `store.${what}`, target: { type: what.split('.')[0]!, id }, summary, before, after });
  }

  async createCategory(input: CategoryInput & { name: string }): Promise<Category> {
    return this.#db.transaction(async () => {
      const category = { ...CATEGORY_DEFAULTS, slug: slugify(input.name), ...defined(input), name: input.name };
      await this.#checkParent(undefined, category.parentId);
      const id = await StoreCategory.insert(this.#db, category);
      await this.#entry('category.create', id, `Created category ${category.name}`, undefined, { id, ...category });
      return { id, ...category };
    });
  }

  async updateCategory(id: number, patch: CategoryInput): Promise<Category> {
    return this.#db.transaction(async () => {
      const changes = defined(patch);
      const before = await this.requireCategory(id);
      const category = { ...before, ...changes };
      await this.#checkParent(id, category.parentId);
      await StoreCategory.update(this.#db, id, changes);
      await this.#entry('category.update', id, `Changed category ${category.name}`, before, category);
      return category;
    });
  }

  /** The parent must exist, and a category may not move under itself (the tree stays a tree). */
  async #checkParent(id: number | undefined, parentId: number): Promise<void> {
    if (parentId === 0) return;
    const all = new Map((await this.categories()).map((c) => [c.id, c]));
    if (!all.has(parentId)) throw new DomainError('CATEGORY_NOT_FOUND', `parentID: no store category with ID ${parentId}.`);
    for (let at = all.get(parentId); at; at = all.get(at.parentId)) {
      if (at.id === id) throw invalid(`parentID: category ${parentId} is category ${id} itself or one of its subcategories.`);
    }
  }

  /** Refuses to delete a category that still holds subcategories or products: nothing vanishes by accident. */
  async deleteCategory(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.requireCategory(id);
      const held = typed<number>(sql`(select count(*) from ${StoreCategory} where ${C.parentId} = ${id})
          + (select count(*) from ${StoreProduct} where ${P.categoryId} = ${id})`);
      const [children] = await this.#db.query(sql`select ${fields({ n: held })}`);
      if (Number(children?.n) > 0) throw new DomainError('CONFLICT', `Store category ${id} still holds subcategories or products; move or delete them first.`);
      await this.#db.run(sql`delete from ${StoreCategory} where ${C.id} = ${id}`);
      await this.#entry('category.delete', id, `Deleted category ${before.name}`, before);
    });
  }

  // ---- products

  /**
   * Products with their variables: those `narrow` (a condition on `p`) keeps, or every one; only the active
   * ones with `activeOnly`, and only those of a category on show with `onSaleOnly`.
   */
  async #products(onSaleOnly: boolean, narrow?: Sql, activeOnly = onSaleOnly): Promise<Product[]> {
    const rest = where(narrow, activeOnly && ACTIVE_PRODUCT);
    const [records, shown] = await Promise.all([
      narrow ? this.#withVariables(p.columns, (row) => StoreProduct.fromArray(row), rest, PRODUCT_ORDER) : this.#everyProduct(rest),
      onSaleOnly ? this.#categoriesOnShow() : undefined,
    ]);
    return shown ? records.filter((record) => shown.has(record.categoryId)) : records;
  }

  /**
   * The whole catalogue's products (`rest` a where on `p`) and, beside them, every variable: for a whole
   * catalogue the join's lookup of each product's variables cost MariaDB more than the small table read
   * whole (docs/performance.md). Reads of a few products keep the join (`#withVariables`).
   */
  async #everyProduct(rest: Sql): Promise<Product[]> {
    const [rows, variableRows] = await Promise.all([
      this.#db.queryArrays(sql`select ${p.columns} from ${p} ${rest} order by ${PRODUCT_ORDER}`),
      this.#db.queryArrays(sql`select ${VARIABLE.columns} from ${v} order by ${v.c.productId}, ${v.c.position}`),
    ]);
    const variables = new Map<number, Variable[]>();
    for (const row of variableRows) {
      const { productId, variable } = readVariable(row);
      const list = variables.get(productId);
      if (list) list.push(variable);
      else variables.set(productId, [variable]);
    }
    return rows.map((row) => {
      const product = StoreProduct.fromArray(row);
      return Object.assign(product, { variables: variables.get(product.id) ?? [] });
    });
  }

  /**
   * The categories on show by id (judgeCategories): a read of three columns of a small table,
   * beside each read of products for sale (after a buy's, for a nested category), so that a product
   * under a hidden category is never sold.
   */
  async #categoriesOnShow(): Promise<ReadonlyMap<number, unknown>> {
    const rows = await this.#db.queryArrays(sql`select ${CATEGORY_FLAGS.columns} from ${StoreCategory}`);
    return judgeCategories(rows.map(CATEGORY_FLAGS.fromArray));
  }

  /**
   * Products (`columns` of `p`, read by `read`) with their variables left-joined: one statement, where a
   * read of the variables beside it was a second round trip on every page of the catalogue and every buy.
   * `rest` (joins, then where) applies to `p`; `order`, unique per product, keeps a product's rows together.
   * The variables are put in their position here: ordering the join by a column of `v` too made MariaDB
   * sort the joined rows, text columns and all, in a temporary table (docs/performance.md).
   */
  async #withVariables<R extends object>(columns: Sql, read: (product: unknown[]) => R, rest: Sql, order: Sql): Promise<(R & { variables: Variable[] })[]> {
    const rows = await this.#db.queryArrays(
      sql`select ${VARIABLE.columns}, ${columns} from ${p} left join ${v} on ${v.c.productId} = ${p.c.id} ${rest} order by ${order}`,
    );
    const products: (R & { variables: Variable[] })[] = [];
    let last: (R & { variables: Variable[] }) | undefined;
    let lastOf: unknown;
    let positions: number[] = [];
    for (const row of rows) {
      // The variable's product id, null for a product that has none (its one row).
      const of = row[0];
      if (!last || of == null || of !== lastOf) {
        last = Object.assign(read(row.slice(VARIABLE.width)), { variables: [] as Variable[] });
        products.push(last);
        positions = [];
      }
      lastOf = of;
      if (of == null) continue;
      const { position, variable } = readVariable(row);
      const at = positions.findIndex((other) => other > position);
      const index = at === -1 ? positions.length : at;
      positions.splice(index, 0, position);
      last.variables.splice(index, 0, variable);
    }
    return products;
  }

  /**
   * The products for sale a buy names, each with its purchase rules and its own category (joined
   * into the product's read, as are its variables: one statement, where it was three). A product in
   * a top-level category is judged by that category alone; one in a nested category, active, needs
   * the categories above it, read whole then (judgeCategories).
   */
  async forSale(ids: number[]): Promise<Map<number, ForSale>> {
    const valid = productIds(ids);
    if (valid.length === 0) return new Map();
    const rows = await this.#withVariables(
      sql`${OWN_CATEGORY.columns}, ${FOR_SALE.columns}`,
      (row) => ({ ...FOR_SALE.read(row.slice(OWN_CATEGORY.width)), category: row[0] == null ? undefined : OWN_CATEGORY.fromArray(row) }),
      sql`left join ${r} on ${r.c.productId} = ${p.c.id} left join ${pc} on ${pc.c.id} = ${p.c.categoryId}
        where ${p.c.id} in ${valid} and ${ACTIVE_PRODUCT}`,
      p.c.id,
    );
    const nested = rows.some(({ category }) => category?.isActive && category.parentId !== 0);
    const shown = nested ? await this.#categoriesOnShow() : undefined;
    const forSale = new Map<number, ForSale>();
    for (const { product, rules, variables, category } of rows) {
      const onShow = shown ? shown.has(product.categoryId) : category?.isActive === true;
      if (onShow) forSale.set(product.id, { product: Object.assign(product, { variables }), rules: rules ?? NONE });
    }
    return forSale;
  }

  /** Every product, or only those for sale. */
  products(onSaleOnly = false): Promise<Product[]> {
    return this.#products(onSaleOnly);
  }

  shownCategories(): Promise<ShownCategory[]> {
    return this.#db
      .queryArrays(sql`select ${SHOWN_CATEGORY.columns} from ${StoreCategory} where ${C.isActive} = 1 ${CATEGORY_ORDER}`)
      .then((rows) => rows.map(SHOWN_CATEGORY.fromArray));
  }

  async shownProducts(
    filter: { categoryIds?: number[]; ids?: number[]; featuredOnly?: boolean },
    categories?: readonly ShownCategory[] | Promise<readonly ShownCategory[]>,
  ): Promise<ShownProduct[]> {
    const conditions: Sql[] = [];
    for (const [column, list] of [
      [p.c.categoryId, filter.categoryIds],
      [p.c.id, filter.ids],
    ] as const) {
      if (!list) continue;
      const ids = productIds(list);
      if (ids.length === 0) return [];
      conditions.push(sql`${column} in ${ids}`);
    }
    if (filter.featuredOnly) conditions.push(sql`${p.c.isFeatured} = 1`);
    conditions.push(ACTIVE_PRODUCT);
    const [products, shown] = await Promise.all([
      this.#withVariables(SHOWN_PRODUCT.columns, SHOWN_PRODUCT.fromArray, where(...conditions), PRODUCT_ORDER),
      categories ? Promise.resolve(categories).then(shownCategoryMap) : this.#categoriesOnShow(),
    ]);
    return products.filter((product) => shown.has(product.categoryId));
  }

  /** The products of the given ids that exist (and are for sale, if asked), in one round of queries. */
  async productsById(ids: number[], onSaleOnly: boolean): Promise<Map<number, Product>> {
    const valid = productIds(ids);
    if (valid.length === 0) return new Map();
    const found = await this.#products(onSaleOnly, sql`${p.c.id} in ${valid}`);
    return new Map(found.map((p) => [p.id, p]));
  }

  async requireProduct(id: number): Promise<Product> {
    const product = (await this.productsById([id], false)).get(id);
    if (!product) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${id}.`);
    return product;
  }

  async createProduct(input: ProductInput & Pick<Product, 'categoryId' | 'name' | 'price'>): Promise<Product> {
    return this.#db.transaction(async () => {
      const { categoryId, name, price } = input;
      const product: Omit<Product, 'id'> = { ...PRODUCT_DEFAULTS, creationDate: now(), ...defined(input), categoryId, name, price };
      await this.#checkProduct(product);
      const id = await StoreProduct.insert(this.#db, product);
      await this.#writeVariables(id, product.variables);
      await this.#audit.record({
        action: 'store.product.create',
        target: { type: 'product', id },
        summary: `Created product ${product.name}`,
        after: { id, ...product },
      });
      return { id, ...product };
    });
  }

  async updateProduct(id: number, patch: ProductInput): Promise<Product> {
    return this.#db.transaction(async () => {
      const changes = defined(patch);
      const before = await this.requireProduct(id);
      await this.#checkProduct({ ...before, ...changes });
      await StoreProduct.update(this.#db, id, changes);
      if (changes.variables) {
        await this.#db.run(sql`delete from ${StoreProductVariable} where ${V.productId} = ${id}`);
        await this.#writeVariables(id, changes.variables);
      }
      // Read again: the stock may have moved since the read above.
      const after = await this.requireProduct(id);
      await this.#audit.record({ action: 'store.product.update', target: { type: 'product', id }, summary: `Changed product ${after.name}`, before, after });
      return after;
    });
  }

  async deleteProduct(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.requireProduct(id);
      await this.#db.run(sql`delete from ${StoreProductVariable} where ${V.productId} = ${id}`);
      await this.#db.run(sql`delete from ${StoreProduct} where ${P.id} = ${id}`);
      await this.#audit.record({ action: 'store.product.delete', target: { type: 'product', id }, summary: `Deleted product ${before.name}`, before });
    });
  }

  /** What the schema cannot check: references, and rules between fields. */
  async #checkProduct(p: Omit<Product, 'id'>): Promise<void> {
    await this.requireCategory(p.categoryId);
    if (p.giveRoleId > 0) {
      const role = await this.#users.getRole(p.giveRoleId);
      if (!role) throw new DomainError('ROLE_NOT_FOUND', `giveRoleID: no role with ID ${p.giveRoleId}.`);
      const privileged = this.#users.privilegeOf(role);
      if (privileged) throw invalid(`giveRoleID: role ${role.id} (${role.name}) ${privileged}: it is never sold, only an admin grants it.`);
    }
    if (p.discountedPrice > 0 && p.discountedPrice >= p.price) {
      throw invalid('discountedPrice must be below price (0 = no discount).');
    }
    const names = new Set<string>();
    for (const v of p.variables) {
      if (names.has(v.name.toLowerCase())) throw invalid(`variables: the name "${v.name}" is declared twice.`);
      names.add(v.name.toLowerCase());
    }
  }

  async #writeVariables(productId: number, variables: Variable[]): Promise<void> {
    for (const [position, v] of variables.entries()) {
      await StoreProductVariable.insert(this.#db, {
        productId,
        name: v.name,
        required: v.required,
        allowedValues: JSON.stringify([...new Set(v.values)]),
        position,
      });
    }
  }

  // ---- both

  /** Sets the priority of the listed categories or products to their place in the list. */
  async reorder(kind: 'categories' | 'products', ids: number[]): Promise<void> {
    const table = kind === 'categories' ? StoreCategory : StoreProduct;
    const code = kind === 'categories' ? 'CATEGORY_NOT_FOUND' : 'PRODUCT_NOT_FOUND';
    await this.#db.transaction(async () => {
      for (const [priority, id] of ids.entries()) {
        const { affectedRows } = await this.#db.run(sql`update ${table} set ${table.c.priority} = ${priority} where ${table.c.id} = ${id}`);
        // MySQL counts only changed rows, so a row already at its place needs a look.
        if (affectedRows === 0 && !(await this.#db.query(sql`select ${table.c.id} from ${table} where ${table.c.id} = ${id}`)).length) {
          throw new DomainError(code, `No ${kind === 'categories' ? 'store category' : 'product'} with ID ${id}.`);
        }
      }
      await this.#entry(`${kind}.reorder`, 0, `Reordered ${kind}: ${ids.join(', ')}`, undefined, ids);
    });
  }

  /**
   * Categories nested to any depth with their products, ordered by priority then id, in three
   * queries whatever the size of the catalogue. `activeOnly` shows only what is for sale: the
   * categories on show (judgeCategories: a hidden one hides all it contains) and their active
   * products; `rootId` returns that category's subtree instead of the top-level list.
   */
  async tree(opts: { activeOnly: boolean; rootId?: number }): Promise<CategoryNode[]> {
    // The whole catalogue's products are read beside its categories; a subtree's products come
    // after them, since the categories say which ids the subtree holds.
    const [read, allProducts] = await Promise.all([
      this.categories(opts.activeOnly),
      opts.rootId === undefined ? this.#products(false, undefined, opts.activeOnly) : undefined,
    ]);
    const categories = opts.activeOnly ? [...judgeCategories(read).values()] : read;
    if (opts.rootId !== undefined && !categories.some((c) => c.id === opts.rootId)) {
      throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${opts.rootId}.`);
    }
    // Products attach to the categories kept only: with activeOnly, an active product of a category on show, the rule of a buy.
    const nodes = new Map<number, CategoryNode>(categories.map((c) => [c.id, { ...c, subcategories: [], products: [] }]));
    const roots: CategoryNode[] = [];
    for (const node of nodes.values()) {
      if (node.id === opts.rootId) roots.push(node);
      if (node.parentId === 0) {
        if (opts.rootId === undefined) roots.push(node);
      } else {
        nodes.get(node.parentId)?.subcategories.push(node);
      }
    }
    const products = allProducts ?? (await this.#subtreeProducts(roots[0]!, opts.activeOnly));
    for (const p of products) nodes.get(p.categoryId)?.products.push(p);
    return roots;
  }

  #subtreeProducts(root: CategoryNode, onSaleOnly: boolean): Promise<Product[]> {
    const ids: number[] = [];
    const walk = (n: CategoryNode) => {
      ids.push(n.id);
      n.subcategories.forEach(walk);
    };
    walk(root);
    return this.#products(false, sql`${p.c.categoryId} in ${ids}`, onSaleOnly);
  }

  // ---- purchase rules

  async rulesFor(productIds: number[]): Promise<Map<number, PurchaseRules>> {
    if (productIds.length === 0) return new Map();
    const rows = await StoreProductRule.select(this.#db, sql`where ${StoreProductRule.c.productId} in ${productIds}`);
    return new Map(rows.map(({ productId, ...rules }) => [productId, rules]));
  }

  /** A product's purchase rules; throws PRODUCT_NOT_FOUND. */
  async rulesOf(productId: number): Promise<PurchaseRules> {
    await this.requireProduct(productId);
    return (await this.rulesFor([productId])).get(productId) ?? NONE;
  }

  async setRules(productId: number, patch: Partial<PurchaseRules>): Promise<PurchaseRules> {
    return this.#db.transaction(async () => {
      await this.requireProduct(productId);
      const changes = defined(patch);
      const stored = (await this.rulesFor([productId])).get(productId);
      const next = { ...(stored ?? NONE), ...changes };
      if (next.requiredProductId === productId) throw new DomainError('VALIDATION_ERROR', 'requiredProductID: a product cannot require itself.');
      if (next.requiredProductId > 0 && !(await this.productsById([next.requiredProductId], false)).has(next.requiredProductId)) {
        throw new DomainError('PRODUCT_NOT_FOUND', `requiredProductID: no product with ID ${next.requiredProductId}.`);
      }
      // Only the rules given are written, so two admins setting different rules both keep theirs.
      if (stored) await StoreProductRule.update(this.#db, productId, changes);
      else await this.#insertRules(productId, next, changes);
      await this.#entry('product.rules', productId, `Changed the purchase rules of product ${productId}`, stored ?? NONE, next);
      return next;
    });
  }

  async #insertRules(productId: number, rules: PurchaseRules, changes: Partial<PurchaseRules>): Promise<void> {
    try {
      await StoreProductRule.insert(this.#db, { ...rules, productId });
    } catch (err) {
      // Another admin's first rules for the product came first: write ours over theirs.
      if (!isUniqueViolation(err)) throw err;
      await StoreProductRule.update(this.#db, productId, changes);
    }
  }

  /** A product's name, active or not; undefined when there is no such product. */
  async productName(productId: number): Promise<string | undefined> {
    return (await this.productsById([productId], false)).get(productId)?.name;
  }
}
