/** Migrations: written once per dialect by each feature, applied in order by MikroORM's migrator. */
import type { MigrationObject } from '@mikro-orm/core';
import { compareCodeUnits } from '../format.ts';
import { fields, raw, sql, typed } from '../sql.ts';
import type { Database } from './database.ts';
import { MigrationLock, type MigrationLockOptions } from './migration-lock.ts';
import type { Dialect } from './url.ts';

/**
 * A migration written once per dialect. `npm run migration:create -- <feature> <name>` writes
 * these from the difference between a feature's entities and its migrated schema.
 */
export interface MigrationDef {
  /** `<timestamp>_<feature>_<what>`: the timestamp orders migrations across features. */
  name: string;
  sqlite: string[];
  mysql: string[];
}

export function defineMigration(def: MigrationDef): MigrationDef {
  return def;
}

export const MIGRATIONS_TABLE = 'core_migrations';

// Typed for the SDK's declaration build, which cannot name the class made inside.
export async function buildMigrationList(defs: MigrationDef[], dialect: Dialect): Promise<MigrationObject[]> {
  const { Migration } = await import('@mikro-orm/migrations');
  const seen = new Set<string>();
  return [...defs]
    .sort((a, b) => compareCodeUnits(a.name, b.name))
    .map((def) => {
      if (seen.has(def.name)) throw new Error(`Migration ${def.name} is defined twice.`);
      seen.add(def.name);
      const statements = def[dialect];
      class FeatureMigration extends Migration {
        override name = def.name;
        up(): void {
          for (const sql of statements) this.addSql(sql);
        }
      }
      return { name: def.name, class: FeatureMigration };
    });
}

/** True when every migration of the enabled features is recorded as applied. */
async function upToDate(db: Database): Promise<boolean> {
  let rows: { name: string }[];
  try {
    rows = await db.query(sql`select ${fields({ name: typed<string>(raw('name')) })} from ${raw(MIGRATIONS_TABLE)}`);
  } catch (err) {
    // No migrations table yet (SQLite "no such table", MySQL ER_NO_SUCH_TABLE): a new database.
    if ((err as { errno?: number }).errno === 1146 || /no such table/.test(String((err as Error).message))) return false;
    throw err;
  }
  const applied = new Set(rows.map((r) => r.name));
  return db.migrationNames.every((name) => applied.has(name));
}

/**
 * Applies the pending migrations. Instances started together take turns through the migration
 * lock (migration-lock.ts): one migrates, the others wait for it and then find nothing to do.
 */
export async function migrate(db: Database, options: Partial<MigrationLockOptions> = {}): Promise<string[]> {
  // Every start but the first after an upgrade ends here, without loading MikroORM or locking.
  if (await upToDate(db)) return [];
  const lock = await MigrationLock.take(
    db,
    { leaseSeconds: options.leaseSeconds ?? 60, say: options.say ?? ((line) => process.stderr.write(`${line}\n`)) },
    () => upToDate(db),
  );
  if (!lock) return [];
  try {
    // The instance that held the lock before may have migrated while this one looked.
    if (await upToDate(db)) return [];
    const done = await (await db.orm()).migrator.up();
    return done.map((m) => m.name);
  } finally {
    await lock.release();
  }
}
