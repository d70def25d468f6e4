/**
 * The catalogue: nested categories, products and their variables. Plain data in, plain data out
 * (money in cents, times as stored UTC text); rows.ts turns it into what the API shows.
 */
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, now } from '../../core/format.ts';
import type { TableRecord } from '../../core/table.ts';
import type { UsersService } from '../users/contract.ts';
import { StoreCategory, StoreProduct, StoreProductVariable } from './entities.ts';

export type Category = TableRecord<typeof StoreCategory>;

/** A value the buyer supplies with a product, e.g. the game server to deliver on. */
export interface Variable {
  name: string;
  required: boolean;
  /** The allowed values; empty = any non-empty text. */
  values: string[];
}

export type Product = TableRecord<typeof StoreProduct> & { variables: Variable[] };

export interface CategoryNode extends Category {
  subcategories: CategoryNode[];
  products: Product[];
}

export type CategoryInput = Partial<Omit<Category, 'id'>>;
export type ProductInput = Partial<Omit<Product, 'id' | 'creationDate'>>;

/** Largest price in cents: the column is a signed 32-bit integer. */
export const MAX_PRICE = 2_147_483_647;

/** The price a buyer pays now: the discount counts while it is set and has not expired. */
export function effectivePrice(p: Pick<Product, 'price' | 'discountedPrice' | 'discountExpiryDate'>, at: string): number {
  const live = p.discountedPrice > 0 && (p.discountExpiryDate === PERMANENT || p.discountExpiryDate > at);
  return live ? p.discountedPrice : p.price;
}

/** Priority first, then age: the order of every list (decisions.md §5). */
const ORDER = 'order by priority, id';

/** A slug from a name: `VIP Ranks!` → `vip-ranks`. */
function slugify(name: string): string {
  return name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 128) || 'category';
}

const CATEGORY_DEFAULTS: Omit<Category, 'id' | 'name' | 'slug'> = {
  parentId: 0, imageId: '', imageType: '', priority: 0, gameStatus: true, gameTitle: '', gameDescription: '',
  gameItem: '', isActive: true,
};

const PRODUCT_DEFAULTS: Omit<Product, 'id' | 'categoryId' | 'name' | 'price' | 'creationDate'> = {
  giveRoleId: 0, imageId: '', imageType: '', details: '', discountedPrice: 0, discountExpiryDate: PERMANENT,
  duration: 0, stock: -1, priority: 0, isFeatured: false, gameStatus: true, gameTitle: '', gameDescription: '',
  gameItem: '', isActive: true, variables: [],
};

function invalid(message: string): DomainError {
  return new DomainError('VALIDATION_ERROR', message);
}

/** Drops the keys a partial update leaves out, so they do not overwrite stored values. */
function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export class Catalogue {
  readonly #db: Database;
  readonly #users: UsersService;

  constructor(db: Database, users: UsersService) {
    this.#db = db;
    this.#users = users;
  }

  // ---- categories

  async categories(activeOnly = false): Promise<Category[]> {
    const rows = await this.#db.query(`select ${StoreCategory.columns} from store_categories${activeOnly ? ' where is_active = 1' : ''} ${ORDER}`);
    return rows.map((r) => StoreCategory.fromRow(r));
  }

  async requireCategory(id: number): Promise<Category> {
    const [row] = Number.isSafeInteger(id) && id > 0
      ? await this.#db.query(`select ${StoreCategory.columns} from store_categories where id = ?`, [id])
      : [];
    if (!row) throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${id}.`);
    return StoreCategory.fromRow(row);
  }

  async createCategory(input: CategoryInput & { name: string }): Promise<Category> {
    return this.#db.transaction(async () => {
      const category = { ...CATEGORY_DEFAULTS, slug: slugify(input.name), ...defined(input), name: input.name };
      await this.#checkParent(undefined, category.parentId);
      const id = await StoreCategory.insert(this.#db, category);
      return { id, ...category };
    });
  }

  async updateCategory(id: number, patch: CategoryInput): Promise<Category> {
    return this.#db.transaction(async () => {
      const category = { ...await this.requireCategory(id), ...defined(patch) };
      await this.#checkParent(id, category.parentId);
      await StoreCategory.update(this.#db, id, category);
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
      await this.requireCategory(id);
      const [children] = await this.#db.query<{ n: number }>(
        'select (select count(*) from store_categories where parent_id = ?) + (select count(*) from store_products where category_id = ?) as n', [id, id]);
      if (Number(children?.n) > 0) throw new DomainError('CONFLICT', `Store category ${id} still holds subcategories or products; move or delete them first.`);
      await this.#db.run('delete from store_categories where id = ?', [id]);
    });
  }

  // ---- products

  /**
   * Products matching `where` (on store_products) with their variables: two queries however many
   * products there are.
   */
  async #products(where: string, params: unknown[]): Promise<Product[]> {
    const rows = await this.#db.query(`select ${StoreProduct.columns} from store_products where ${where} ${ORDER}`, params);
    if (rows.length === 0) return [];
    const variables = await this.#db.query(
      `select product_id, name, \`required\`, allowed_values from store_product_variables
       where product_id in (select id from store_products where ${where}) order by product_id, \`position\``, params);
    const byProduct = new Map<number, Variable[]>();
    for (const v of variables) {
      const list = byProduct.get(Number(v.product_id)) ?? [];
      list.push({ name: String(v.name), required: Boolean(Number(v.required)), values: JSON.parse(String(v.allowed_values)) as string[] });
      byProduct.set(Number(v.product_id), list);
    }
    return rows.map((r) => {
      const product = StoreProduct.fromRow(r) as Product;
      product.variables = byProduct.get(product.id) ?? [];
      return product;
    });
  }

  products(activeOnly = false): Promise<Product[]> {
    return this.#products(activeOnly ? 'is_active = 1' : '1 = 1', []);
  }

  /** The products of the given ids that exist (and are active, if asked), in one round of queries. */
  async productsById(ids: number[], activeOnly: boolean): Promise<Map<number, Product>> {
    const valid = [...new Set(ids.filter((id) => Number.isSafeInteger(id) && id > 0))];
    if (valid.length === 0) return new Map();
    const found = await this.#products(`id in (${valid.map(() => '?').join(', ')})${activeOnly ? ' and is_active = 1' : ''}`, valid);
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
      return { id, ...product };
    });
  }

  async updateProduct(id: number, patch: ProductInput): Promise<Product> {
    return this.#db.transaction(async () => {
      const current = await this.requireProduct(id);
      const product = { ...current, ...defined(patch) };
      await this.#checkProduct(product);
      await StoreProduct.update(this.#db, id, product);
      if (patch.variables) {
        await this.#db.run('delete from store_product_variables where product_id = ?', [id]);
        await this.#writeVariables(id, product.variables);
      }
      return product;
    });
  }

  async deleteProduct(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      await this.requireProduct(id);
      await this.#db.run('delete from store_product_variables where product_id = ?', [id]);
      await this.#db.run('delete from store_products where id = ?', [id]);
    });
  }

  /** What the schema cannot check: references, and rules between fields. */
  async #checkProduct(p: Omit<Product, 'id'>): Promise<void> {
    await this.requireCategory(p.categoryId);
    if (p.giveRoleId > 0 && !await this.#users.getRole(p.giveRoleId)) {
      throw new DomainError('ROLE_NOT_FOUND', `giveRoleID: no role with ID ${p.giveRoleId}.`);
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
        productId, name: v.name, required: v.required, allowedValues: JSON.stringify([...new Set(v.values)]), position,
      });
    }
  }

  // ---- both

  /** Sets the priority of the listed categories or products to their place in the list. */
  async reorder(kind: 'categories' | 'products', ids: number[]): Promise<void> {
    const table = kind === 'categories' ? 'store_categories' : 'store_products';
    const code = kind === 'categories' ? 'CATEGORY_NOT_FOUND' : 'PRODUCT_NOT_FOUND';
    await this.#db.transaction(async () => {
      for (const [priority, id] of ids.entries()) {
        const { affectedRows } = await this.#db.run(`update ${table} set priority = ? where id = ?`, [priority, id]);
        // MySQL counts only changed rows, so a row already at its place needs a look.
        if (affectedRows === 0 && !(await this.#db.query(`select id from ${table} where id = ?`, [id])).length) {
          throw new DomainError(code, `No ${kind === 'categories' ? 'store category' : 'product'} with ID ${id}.`);
        }
      }
    });
  }

  /**
   * Categories nested to any depth with their products, ordered by priority then id, in three
   * queries whatever the size of the catalogue. `activeOnly` hides inactive categories (with all
   * they contain) and inactive products; `rootId` returns that category's subtree instead of the
   * top-level list.
   */
  async tree(opts: { activeOnly: boolean; rootId?: number }): Promise<CategoryNode[]> {
    const categories = await this.categories(opts.activeOnly);
    if (opts.rootId !== undefined && !categories.some((c) => c.id === opts.rootId)) {
      throw new DomainError('CATEGORY_NOT_FOUND', `No store category with ID ${opts.rootId}.`);
    }
    const nodes = new Map<number, CategoryNode>(categories.map((c) => [c.id, { ...c, subcategories: [], products: [] }]));
    const roots: CategoryNode[] = [];
    for (const node of nodes.values()) {
      if (node.id === opts.rootId) roots.push(node);
      if (node.parentId === 0) {
        if (opts.rootId === undefined) roots.push(node);
      } else {
        // A child of a hidden or missing parent is never attached, so its whole branch stays hidden.
        nodes.get(node.parentId)?.subcategories.push(node);
      }
    }
    const products = opts.rootId === undefined
      ? await this.products(opts.activeOnly)
      : await this.#subtreeProducts(roots[0]!);
    for (const p of products) nodes.get(p.categoryId)?.products.push(p);
    return roots;
  }

  #subtreeProducts(root: CategoryNode): Promise<Product[]> {
    const ids: number[] = [];
    const walk = (n: CategoryNode) => { ids.push(n.id); n.subcategories.forEach(walk); };
    walk(root);
    return this.#products(`category_id in (${ids.map(() => '?').join(', ')})`, ids);
  }
}
