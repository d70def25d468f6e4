/**
 * Writes a feature's next migration from the difference between its entities and the schema its
 * existing migrations build, once for SQLite and once for MySQL/MariaDB:
 *   npm run migration:create -- <feature|core|path/to/plugin-package> <what>
 * (a plugin package's entities and migrations are in its src/index.ts; its migrations go to src/migrations)
 * MySQL needs a server: MIGRATION_MYSQL_URL (or TEST_MYSQL_URL), e.g. mysql://root:pw@127.0.0.1:3307/any
 * (the tool creates and drops a scratch database of its own there).
 */
import { existsSync, writeFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { loadConfig, rootDir } from '../config.ts';
import { migrate, type MigrationDef } from '../db/migrations.ts';
import { openDatabase } from '../db/open.ts';
import type { Dialect } from '../db/url.ts';
import { coreEntities } from '../entities.ts';
import { discoverFeatures } from '../discover.ts';
import { builtinNames, definitionOf } from '../features.ts';
import { migrations as coreMigrations } from '../migrations/index.ts';
import { commandLine, usage } from './args.ts';

const USAGE = 'usage: npm run migration:create -- <feature|core|path/to/plugin-package> <what, e.g. init or add_stock>';
const {
  positionals: [feature, what, ...extra],
} = commandLine(USAGE, {});
if (!feature || !what || !/^[a-z0-9_]+$/.test(what) || extra.length) usage(USAGE);

let entities: object[];
let existing: MigrationDef[];
let dir: string;
/** The feature's name: the argument, or a package's feature name. */
let name = feature;
/** A package imports defineMigration from the SDK; a built-in feature from core. */
let fromPackage = false;
if (feature === 'core') {
  entities = coreEntities;
  existing = coreMigrations;
  dir = join(rootDir, 'core/migrations');
} else if (feature.includes('/') || feature.startsWith('.')) {
  // A plugin package's folder (npm run starts in the host's folder: the path is from where it was typed).
  const pkg = resolve(process.env.INIT_CWD ?? process.cwd(), feature);
  if (!existsSync(join(pkg, 'package.json')) || !existsSync(join(pkg, 'src', 'index.ts'))) {
    throw new Error(`${pkg} is not a plugin package: it needs a package.json and src/index.ts.`);
  }
  await import('../host-objects.ts');
  const def = definitionOf(await import(pathToFileURL(join(pkg, 'src', 'index.ts')).href));
  if (!def) throw new Error(`${join(pkg, 'src', 'index.ts')} does not export a feature made by defineFeature().`);
  entities = def.entities ?? [];
  existing = def.migrations ?? [];
  dir = join(pkg, 'src', 'migrations');
  name = def.name;
  fromPackage = true;
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
    cleanup = async () => {
      await admin.query(`drop database ${scratch}`);
      await admin.end();
    };
  }
  try {
    const db = await openDatabase({
      config: {
        url,
        migrateOnStart: true,
        poolSize: 2,
        connectTimeoutMs: 2000,
        retryAfterSeconds: 1,
        transactionTries: 1,
        retryDelayMs: 0,
        writeFaultSeconds: 1,
        debug: false,
        bootRetrySeconds: 0,
        createDatabase: false,
        markPingSeconds: 60,
        sqlMode: '',
        migrationLockSeconds: 60,
      },
      entities,
      migrations: existing,
    });
    try {
      await migrate(db);
      const sql = await (await db.orm()).schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: false });
      return sql
        .split(/;\n/)
        .map((s) => s.trim())
        .filter(Boolean)
        .filter((s) => !/core_migrations/.test(s));
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
  console.log(`The "${name}" schema matches its entities: no migration needed.`);
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const migration = `${stamp}_${name.replaceAll('-', '_')}_${what}`;
mkdirSync(dir, { recursive: true });
const coreImport = relative(dir, join(rootDir, 'core/db.ts')).replaceAll('\\', '/');
const from = fromPackage ? '@community-platform/sdk' : coreImport.startsWith('.') ? coreImport : `./${coreImport}`;
const list = (items: string[]) => items.map((s) => `    ${JSON.stringify(s)},`).join('\n');
writeFileSync(
  join(dir, `${migration}.ts`),
  `import { defineMigration } from '${from}';

export default defineMigration({
  name: '${migration}',
  sqlite: [
${list(sqlite)}
  ],
  mysql: [
${list(mysql)}
  ],
});
`,
);
// migrations/index.ts lists every file of the folder in order, so nothing is forgotten.
const files = readdirSync(dir)
  .filter((f) => /^\d{14}_.*\.ts$/.test(f))
  .sort();
writeFileSync(
  join(dir, 'index.ts'),
  `// Written by npm run migration:create; lists every migration of this folder in order.
${files.map((f, i) => `import m${i} from './${f}';`).join('\n')}

export const migrations = [${files.map((_f, i) => `m${i}`).join(', ')}];
`,
);
const shownFrom = fromPackage ? (process.env.INIT_CWD ?? process.cwd()) : rootDir;
console.log(`Wrote ${relative(shownFrom, join(dir, `${migration}.ts`))} (${sqlite.length} SQLite and ${mysql.length} MySQL statements).`);
