import type { AuditLog } from '../../core/audit.ts';
/** Top-up packages: what a player can buy credits in, priced in a currency. */
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { sql } from '../../core/sql.ts';
import type { TopUpPackage } from './contract.ts';
import { PaymentsPackage } from './entities.ts';
import { centsOf, currencyOf, type Package, type PackageInput } from './model.ts';

export class Packages {
  readonly #db: Database;
  readonly #settings: SettingsService;

  readonly #audit: AuditLog;

  constructor(db: Database, settings: SettingsService, audit: AuditLog) {
    this.#db = db;
    this.#settings = settings;
    this.#audit = audit;
  }

  /** A staff change's audit entry, in its transaction. */
  #record(verb: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `payments.package.${verb}`, target: { type: 'package', id }, summary, before, after });
  }

  async all(): Promise<Package[]> {
    return PaymentsPackage.select(this.#db, sql`order by ${PaymentsPackage.c.price}, ${PaymentsPackage.c.id}`);
  }

  async topUpPackages(): Promise<TopUpPackage[]> {
    return (await this.all()).map((p) => ({ id: p.id, name: p.name, price: p.price, currency: p.currency, credits: p.credits + p.bonus }));
  }

  async require(id: number): Promise<Package> {
    const pkg = await PaymentsPackage.find(this.#db, id);
    if (!pkg) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${id}.`);
    return pkg;
  }

  #values(input: PackageInput, old?: Package): Omit<Package, 'id' | 'creationDate'> {
    const name = input.name ?? old?.name;
    if (name === undefined || name.trim() === '') throw new DomainError('VALIDATION_ERROR', 'name is required.');
    return {
      name: name.trim(),
      price: input.price === undefined && old ? old.price : centsOf(input.price, 'price', 1),
      currency: input.currency === undefined ? (old?.currency ?? this.#settings.get().currency) : currencyOf(input.currency),
      credits: input.credits === undefined && old ? old.credits : centsOf(input.credits, 'credits', 0),
      bonus: input.bonus === undefined ? (old?.bonus ?? 0) : centsOf(input.bonus, 'bonus', 0),
    };
  }

  async create(input: PackageInput): Promise<Package> {
    const v = this.#values(input);
    const creationDate = now();
    return this.#db.transaction(async () => {
      const id = await PaymentsPackage.insert(this.#db, { ...v, creationDate });
      await this.#record('create', id, `Created top-up package ${v.name}`, undefined, { id, ...v });
      return { id, ...v, creationDate };
    });
  }

  async update(id: number, input: PackageInput): Promise<Package> {
    return this.#db.transaction(async () => {
      const old = await this.require(id);
      const v = this.#values(input, old);
      // Only the fields given are written: the others stay as another admin may have just set them.
      const given = Object.entries(v).filter(([field]) => input[field as keyof PackageInput] !== undefined);
      await PaymentsPackage.update(this.#db, id, Object.fromEntries(given));
      await this.#record('update', id, `Changed top-up package ${v.name}`, old, { ...old, ...v });
      return { ...old, ...v };
    });
  }

  /** Payments already made keep their amounts: they copied them. */
  async delete(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.require(id);
      await this.#db.run(sql`delete from ${PaymentsPackage} where ${PaymentsPackage.c.id} = ${id}`);
      await this.#record('delete', id, `Deleted top-up package ${before.name}`, before);
    });
  }
}
