/**
 * Writes a feature's next migration from the difference between its entities and the schema its
 * existing migrations build, once for SQLite and once for MySQL/MariaDB:
 *   npm run migration:create -- <feature|core> <what>
 * MySQL needs a server: MIGRATION_MYSQL_URL (or TEST_MYSQL_URL), e.g. mysql://root:pw@127.0.0.1:3307/any
 * (the tool creates and drops a scratch database of its own there).
 */
import { writeFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { loadConfig, rootDir } from '../config.ts';
import { migrate, type MigrationDef } from '../db/migrations.ts';
import { openDatabase } from '../db/open.ts';
import type { Dialect } from '../db/url.ts';
import { coreEntities } from '../entities.ts';
import { builtinNames, discoverFeatures } from '../features.ts';
import { migrations as coreMigrations } from '../migrations/index.ts';
import { commandLine, usage } from './args.ts';

const USAGE = 'usage: npm run migration:create -- <feature|core> <what, e.g. init or add_stock>';
const { positionals: [feature, what, ...extra] } = commandLine(USAGE, {});
if (!feature || !what || !/^[a-z0-9_]+$/.test(what) || extra.length) usage(USAGE);

let entities: object[];
let existing: MigrationDef[];
let dir: string;
if (feature === 'core') {
  entities = coreEntities;
  existing = coreMigrations;
  dir = join(rootDir, 'core/migrations');
} else {
  // Only the one feature is imported: another feature's unfinished work cannot get in the way.
  const only = Object.fromEntries(builtinNames().map((n) => [n, { enabled: n === feature }]));
  const all = await discoverFeatures(loadConfig({}, { plugins: only }));
  const def = all.find((f) => f.def.name === feature)?.def;
  if (!def) throw new Error(`No feature named "${feature}" in plugins/.`);
  entities = def.entities ?? [];
  existing = def.migrations ?? [];
  dir = join(rootDir, 'plugins', feature, 'migrations');
}

async function diff(dialect: Dialect): Promise<string[]> {
  let url = 'sqlite::memory:';
  let cleanup = async () => {};
  if (dialect === 'mysql') {
    const server = process.env.MIGRATION_MYSQL_URL ?? process.env.TEST_MYSQL_URL;
    if (!server) throw new Error('Set MIGRATION_MYSQL_URL to a MySQL/MariaDB server the tool may create a scratch database on.');
    const scratch = `mig_${randomBytes(4).toString('hex')}`;
    const root = new URL(server);
    root.pathname = '/';
    const admin = await createConnection({ uri: root.toString() });
    await admin.query(`create database ${scratch}`);
    const u = new URL(server);
    u.pathname = `/${scratch}`;
    url = u.toString();
    cleanup = async () => { await admin.query(`drop database ${scratch}`); await admin.end(); };
  }
  try {
    const db = await openDatabase({
      config: { url, migrateOnStart: true, poolSize: 2, connectTimeoutMs: 2000, retryAfterSeconds: 1, transactionTries: 1, retryDelayMs: 0,
        writeFaultSeconds: 1, debug: false, bootRetrySeconds: 0, createDatabase: false, markPingSeconds: 60, sqlMode: '', migrationLockSeconds: 60 },
      entities, migrations: existing,
    });
    try {
      await migrate(db);
      const sql = await (await db.orm()).schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: false });
      return sql.split(/;\n/).map((s) => s.trim()).filter(Boolean).filter((s) => !/core_migrations/.test(s));
    } finally {
      await db.close();
    }
  } finally {
    await cleanup();
  }
}

const sqlite = await diff('sqlite');
const mysql = await diff('mysql');
if (!sqlite.length && !mysql.length) {
  console.log(`The "${feature}" schema matches its entities: no migration needed.`);
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const name = `${stamp}_${feature.replaceAll('-', '_')}_${what}`;
mkdirSync(dir, { recursive: true });
const coreImport = relative(dir, join(rootDir, 'core/db.ts')).replaceAll('\\', '/');
const list = (items: string[]) => items.map((s) => `    ${JSON.stringify(s)},`).join('\n');
writeFileSync(join(dir, `${name}.ts`), `import { defineMigration } from '${coreImport.startsWith('.') ? coreImport : `./${coreImport}`}';

export default defineMigration({
  name: '${name}',
  sqlite: [
${list(sqlite)}
  ],
  mysql: [
${list(mysql)}
  ],
});
`);
// migrations/index.ts lists every file of the folder in order, so nothing is forgotten.
const files = readdirSync(dir).filter((f) => /^\d{14}_.*\.ts$/.test(f)).sort();
writeFileSync(join(dir, 'index.ts'), `// Written by npm run migration:create; lists every migration of this folder in order.
${files.map((f, i) => `import m${i} from './${f}';`).join('\n')}

export const migrations = [${files.map((_f, i) => `m${i}`).join(', ')}];
`);
console.log(`Wrote ${relative(rootDir, join(dir, `${name}.ts`))} (${sqlite.length} SQLite and ${mysql.length} MySQL statements).`);
