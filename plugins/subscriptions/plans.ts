/** Plans: which store product is sold as a subscription, on what terms. */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { fields, sql } from '../../core/sql.ts';
import type { StoreCatalogue } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { PlanInput, PlanRow } from './contract.ts';
import { SubscriptionsPlan } from './entities.ts';
import { type Plan, planRow } from './model.ts';

const PL = SubscriptionsPlan.c;

export interface PlanDeps {
  db: Database;
  settings: SettingsService;
  catalogue: StoreCatalogue;
  users: UsersService;
  audit: AuditLog;
}

export class Plans {
  readonly #d: PlanDeps;
  /**
   * The products with a plan on sale, read again every round (refresh) and at once here after a
   * change, so a product page of a product without one costs no statement. Undefined: not read yet.
   */
  #onSale: Set<number> | undefined;
  /** The first read of #onSale while it runs. */
  #first: Promise<void> | undefined;

  constructor(deps: PlanDeps) {
    this.#d = deps;
  }

  async #rows(plans: Plan[]): Promise<PlanRow[]> {
    const products = await this.#d.catalogue.productsById(
      plans.map((p) => p.productId),
      false,
    );
    const currency = this.#d.settings.get().currency;
    return plans.map((p) => planRow(p, products.get(p.productId)?.name ?? '', currency));
  }

  async list(): Promise<PlanRow[]> {
    return this.#rows(await SubscriptionsPlan.select(this.#d.db, sql`order by ${PL.id}`));
  }

  /** The stored plan; throws SUBSCRIPTION_PLAN_NOT_FOUND. */
  async find(id: number): Promise<Plan> {
    const plan = await SubscriptionsPlan.find(this.#d.db, id);
    if (!plan) throw new DomainError('SUBSCRIPTION_PLAN_NOT_FOUND', `No subscription plan with ID ${id}.`);
    return plan;
  }

  async get(id: number): Promise<PlanRow> {
    return (await this.#rows([await this.find(id)]))[0]!;
  }

  /** The product's plan on sale; throws SUBSCRIPTION_PLAN_NOT_FOUND when it has none. */
  async onSale(productId: number): Promise<Plan> {
    const [plan] = await SubscriptionsPlan.select(this.#d.db, sql`where ${PL.productId} = ${productId} and ${PL.isActive} = ${true}`);
    if (!plan) throw new DomainError('SUBSCRIPTION_PLAN_NOT_FOUND', `Product ${productId} is not sold as a subscription.`);
    return plan;
  }

  /** Reads which products have a plan on sale (other instances' changes arrive this way). */
  async refresh(): Promise<void> {
    const rows = await this.#d.db.query(sql`select ${fields({ productId: PL.productId })} from ${SubscriptionsPlan} where ${PL.isActive} = ${true}`);
    this.#onSale = new Set(rows.map((r) => Number(r.productId)));
  }

  async ofProduct(productId: number): Promise<PlanRow | undefined> {
    // Before the first round: read the list once (shared by the pages asking meanwhile), not each product's plan.
    if (!this.#onSale) {
      this.#first ??= this.refresh().finally(() => {
        this.#first = undefined;
      });
      await this.#first;
    }
    if (!this.#onSale?.has(productId)) return undefined;
    const [plan] = await SubscriptionsPlan.select(this.#d.db, sql`where ${PL.productId} = ${productId} and ${PL.isActive} = ${true}`);
    return plan ? (await this.#rows([plan]))[0] : undefined;
  }

  /** A role a subscription may give: it exists and is not privileged (a product never sells one). */
  async #checkRole(roleId: number): Promise<void> {
    if (roleId === 0) return;
    const role = await this.#d.users.getRole(roleId);
    if (!role) throw new DomainError('ROLE_NOT_FOUND', `No role with ID ${roleId}.`);
    const privileged = this.#d.users.privilegeOf(role);
    if (privileged) throw new DomainError('VALIDATION_ERROR', `roleID: role ${roleId} (${role.name}) ${privileged}: it is never sold.`);
  }

  async create(input: PlanInput): Promise<PlanRow> {
    const name = await this.#d.catalogue.productName(input.productId);
    if (name === undefined) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${input.productId}.`);
    await this.#checkRole(input.roleId);
    try {
      const created = await this.#d.db.transaction(async () => {
        const { group, ...terms } = input;
        const plan = await this.get(await SubscriptionsPlan.insert(this.#d.db, { ...terms, groupName: group ?? null, creationDate: now() }));
        await this.#d.audit.record({
          action: 'subscriptions.plan.create',
          target: { type: 'subscription plan', id: plan.id },
          summary: `${name} sold as a subscription: ${plan.renews}`,
          after: plan,
        });
        return plan;
      });
      await this.refresh();
      return created;
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `Product ${input.productId} already has a subscription plan.`);
      throw err;
    }
  }

  async update(id: number, patch: Partial<Omit<PlanInput, 'productId'>>): Promise<PlanRow> {
    if (patch.roleId !== undefined) await this.#checkRole(patch.roleId);
    const updated = await this.#d.db.transaction(async () => {
      const before = await this.get(id);
      const { group, ...terms } = patch;
      await SubscriptionsPlan.update(this.#d.db, id, group === undefined ? terms : { ...terms, groupName: group });
      const after = await this.get(id);
      await this.#d.audit.record({
        action: 'subscriptions.plan.update',
        target: { type: 'subscription plan', id },
        summary: `Plan of ${after.productName} changed`,
        before,
        after,
      });
      return after;
    });
    await this.refresh();
    return updated;
  }
}
