/**
 * Purchase rules of the platform whose API we serve, one row per product that has any:
 * a product bought before, a linked chat account, no rank downgrade within a category.
 */
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { TableRecord } from '../../core/table.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import type { Catalogue, Product } from './catalogue.ts';
import { StoreProductRule } from './entities.ts';

export type PurchaseRules = Omit<TableRecord<typeof StoreProductRule>, 'productId'>;

const NONE: PurchaseRules = { requiredProductId: 0, requireLinkedAccount: false, preventDowngrade: false };

export class Rules {
  readonly #db: Database;
  readonly #users: UsersService;
  readonly #catalogue: Catalogue;

  constructor(db: Database, users: UsersService, catalogue: Catalogue) {
    this.#db = db;
    this.#users = users;
    this.#catalogue = catalogue;
  }

  async #of(productIds: number[]): Promise<Map<number, PurchaseRules>> {
    if (productIds.length === 0) return new Map();
    const rows = await this.#db.query(
      `select ${StoreProductRule.columns} from store_product_rules where product_id in (${productIds.map(() => '?').join(', ')})`, productIds);
    return new Map(rows.map((r) => {
      const { productId, ...rules } = StoreProductRule.fromRow(r);
      return [productId, rules];
    }));
  }

  /** Throws PRODUCT_NOT_FOUND. */
  async get(productId: number): Promise<PurchaseRules> {
    await this.#catalogue.requireProduct(productId);
    return (await this.#of([productId])).get(productId) ?? NONE;
  }

  async set(productId: number, patch: Partial<PurchaseRules>): Promise<PurchaseRules> {
    return this.#db.transaction(async () => {
      const next = { ...await this.get(productId) };
      for (const [key, value] of Object.entries(patch) as [keyof PurchaseRules, never][]) if (value !== undefined) next[key] = value;
      if (next.requiredProductId === productId) throw new DomainError('VALIDATION_ERROR', 'requiredProductID: a product cannot require itself.');
      if (next.requiredProductId > 0 && !(await this.#catalogue.productsById([next.requiredProductId], false)).has(next.requiredProductId)) {
        throw new DomainError('PRODUCT_NOT_FOUND', `requiredProductID: no product with ID ${next.requiredProductId}.`);
      }
      await this.#db.run('delete from store_product_rules where product_id = ?', [productId]);
      await StoreProductRule.insert(this.#db, { ...next, productId });
      return next;
    });
  }

  /** The buy's checks, inside its transaction: each refusal names the product. */
  async check(user: UserAccount, products: Product[]): Promise<void> {
    const rules = await this.#of([...new Set(products.map((p) => p.id))]);
    for (const product of products) {
      const rule = rules.get(product.id);
      if (!rule) continue;
      if (rule.requiredProductId > 0) {
        const [bought] = await this.#db.query(
          `select o.id from store_orders o join store_order_items i on i.order_id = o.id
           where o.account_id = ? and o.status = 'completed' and i.product_id = ? limit 1`, [user.id, rule.requiredProductId]);
        if (!bought) {
          const required = (await this.#catalogue.productsById([rule.requiredProductId], false)).get(rule.requiredProductId);
          throw new DomainError('REQUIRED_PRODUCT', `${product.name} (product ${product.id}) requires buying ${required?.name ?? `product ${rule.requiredProductId}`} first.`);
        }
      }
      if (rule.requireLinkedAccount && !user.linkedAccounts.chat) {
        throw new DomainError('REQUIRED_LINKED_ACCOUNT', `${product.name} (product ${product.id}) requires a linked chat account.`);
      }
      if (rule.preventDowngrade && product.giveRoleId > 0) await this.#checkDowngrade(user, product);
    }
  }

  /** Refuses a rank below one the buyer holds from a product of the same category. */
  async #checkDowngrade(user: UserAccount, product: Product): Promise<void> {
    const role = await this.#users.getRole(product.giveRoleId);
    if (!role) return;
    const ranks = await this.#db.query<{ give_role_id: number }>(
      'select distinct give_role_id from store_products where category_id = ? and give_role_id > 0', [product.categoryId]);
    const sameCategory = new Set(ranks.map((r) => Number(r.give_role_id)));
    const higher = (await this.#users.rolesOf(user.id)).find((r) => sameCategory.has(r.id) && r.priority > role.priority);
    if (higher) {
      throw new DomainError('DOWNGRADE_NOT_ALLOWED', `${product.name} (product ${product.id}) would be a downgrade: you hold ${higher.name}.`);
    }
  }
}
