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

  constructor(db: Database, settings: SettingsService) {
    this.#db = db;
    this.#settings = settings;
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
    const id = await PaymentsPackage.insert(this.#db, { ...v, creationDate });
    return { id, ...v, creationDate };
  }

  async update(id: number, input: PackageInput): Promise<Package> {
    return this.#db.transaction(async () => {
      const old = await this.require(id);
      const v = this.#values(input, old);
      // Only the fields given are written: the others stay as another admin may have just set them.
      const given = Object.entries(v).filter(([field]) => input[field as keyof PackageInput] !== undefined);
      await PaymentsPackage.update(this.#db, id, Object.fromEntries(given));
      return { ...old, ...v };
    });
  }

  /** Payments already made keep their amounts: they copied them. */
  async delete(id: number): Promise<void> {
    const { affectedRows } = await this.#db.run(sql`delete from ${PaymentsPackage} where ${PaymentsPackage.c.id} = ${id}`);
    if (affectedRows === 0) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${id}.`);
  }
}
