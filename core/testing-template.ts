/**
 * Test builds start from a migrated template instead of migrating each fresh database: migrating
 * is most of a build's time (every migration's DDL, MariaDB's ALTERs copying tables, and MikroORM's
 * migrator loaded once per test process). The first build of a set of migrations migrates a scratch
 * database and keeps the tables' definitions and rows; later builds create those directly. Other
 * test processes read them from a file under the system's temp folder named by a hash of the
 * migrations' statements (and the server's version), so an edited migration makes a new template.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { openFeaturesDatabase } from './boot.ts';
import { loadConfig, type AppConfig } from './config.ts';
import type { Database } from './db/database.ts';
import { migrate, type MigrationDef } from './db/migrations.ts';
import { discoverFeatures } from './discover.ts';
import { selectEnabled } from './features.ts';
import { migrations as coreMigrations } from './migrations/index.ts';

type Value = string | number | null | { hex: string };

/** A migrated database: statements that make its schema (in order), and the rows migrations wrote. */
interface Template {
  schema: string[];
  rows: { table: string; columns: string[]; values: Value[][] }[];
}

const DIR = join(tmpdir(), 'community-platform-test-templates');
/** Part of each file's name: a change to what a template holds makes new files. */
const FORMAT = 1;
const made = new Map<string, Promise<Template | undefined>>();
const versions = new Map<string, Promise<string>>();

/** The connection options the server's own use, so dumped values come back as they went in. */
const CONNECTION = { timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, jsonStrings: true } as const;

function stored(v: unknown): Value {
  if (v === null || typeof v === 'string' || typeof v === 'number') return v;
  if (typeof v === 'bigint') return String(v);
  if (v instanceof Uint8Array) return { hex: Buffer.from(v).toString('hex') };
  throw new Error(`test template: cannot keep a ${typeof v} value`);
}

function bound(v: Value): string | number | null | Buffer {
  return v !== null && typeof v === 'object' ? Buffer.from(v.hex, 'hex') : v;
}

async function dumpSqlite(db: Database): Promise<Template> {
  const objects = await db.unchecked.query<{ name: string; type: string; sql: string }>(
    "select name, type, sql from sqlite_master where sql is not null and name not like 'sqlite_%' order by type <> 'table', rowid",
  );
  const rows: Template['rows'] = [];
  for (const table of [...objects.filter((o) => o.type === 'table').map((o) => o.name), 'sqlite_sequence']) {
    const found = await db.unchecked.query(`select * from "${table}"`).catch(() => []);
    if (found.length) rows.push({ table, columns: Object.keys(found[0]!), values: found.map((r) => Object.values(r).map(stored)) });
  }
  return { schema: objects.map((o) => o.sql), rows };
}

/** Undefined when the database holds views or triggers, which the template leaves to the migrations. */
async function dumpMysql(url: string): Promise<Template | undefined> {
  const conn = await createConnection({ uri: url, ...CONNECTION });
  try {
    const [tables] = (await conn.query('show full tables')) as unknown as [Record<string, string>[]];
    const [triggers] = (await conn.query('show triggers')) as unknown as [unknown[]];
    if (triggers.length || tables.some((t) => Object.values(t)[1] !== 'BASE TABLE')) return undefined;
    const template: Template = { schema: [], rows: [] };
    for (const name of tables.map((t) => Object.values(t)[0]!)) {
      const [[created]] = (await conn.query(`show create table \`${name}\``)) as unknown as [Record<string, string>[]];
      template.schema.push(created!['Create Table']!);
      const [found] = (await conn.query(`select * from \`${name}\``)) as unknown as [Record<string, unknown>[]];
      if (found.length) template.rows.push({ table: name, columns: Object.keys(found[0]!), values: found.map((r) => Object.values(r).map(stored)) });
    }
    return template;
  } finally {
    await conn.end();
  }
}

/** Migrates a scratch database of the same kind as `config`'s and dumps it. */
async function migrated(config: AppConfig, features: Awaited<ReturnType<typeof discoverFeatures>>): Promise<Template | undefined> {
  const server = config.database.url.startsWith('sqlite') ? undefined : new URL(config.database.url);
  const name = `tpl_${randomBytes(6).toString('hex')}`;
  const url = server ? Object.assign(new URL(server), { pathname: `/${name}` }).toString() : 'sqlite::memory:';
  const admin = server && (await createConnection({ uri: Object.assign(new URL(server), { pathname: '/' }).toString() }));
  try {
    if (admin) await admin.query(`create database ${name}`);
    const db = await openFeaturesDatabase({ ...config, database: { ...config.database, url } }, features, () => {});
    try {
      await migrate(db, { say: () => {} });
      return server ? await dumpMysql(url) : await dumpSqlite(db);
    } finally {
      await db.close();
    }
  } finally {
    if (admin) {
      await admin.query(`drop database if exists ${name}`);
      await admin.end();
    }
  }
}

/** Written whole under another name, then renamed: a process reading it never sees half a file. Only a speed-up, so a folder it cannot write is no failure. */
function keep(file: string, template: Template): void {
  const part = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(part, JSON.stringify(template));
    renameSync(part, file);
  } catch {
    rmSync(part, { force: true });
  }
}

async function serverVersion(url: string): Promise<string> {
  const root = Object.assign(new URL(url), { pathname: '/' }).toString();
  let version = versions.get(root);
  if (!version) {
    version = (async () => {
      const conn = await createConnection({ uri: root });
      const [[row]] = (await conn.query('select version() as v')) as unknown as [{ v: string }[]];
      await conn.end();
      return `${new URL(url).host} ${row!.v}`;
    })();
    versions.set(root, version);
  }
  return version;
}

/**
 * The template for a build with this environment and config, made or read once; undefined when
 * the build is to migrate for itself (migrations off at start, a database the test chose, or a
 * config the build will refuse with its own error).
 */
export async function templateFor(env: NodeJS.ProcessEnv, overrides: unknown): Promise<Template | undefined> {
  let config: AppConfig;
  let features: Awaited<ReturnType<typeof discoverFeatures>>;
  try {
    config = loadConfig(env, overrides);
    features = selectEnabled(await discoverFeatures(config), config);
  } catch {
    return undefined;
  }
  if (!config.database.migrateOnStart || config.database.url !== env.DATABASE_URL) return undefined;
  const sqlite = config.database.url.startsWith('sqlite');
  if (sqlite && config.database.url !== 'sqlite::memory:') return undefined;
  const defs: MigrationDef[] = [...coreMigrations, ...features.flatMap((f) => f.def.migrations ?? [])];
  const dialect = sqlite ? 'sqlite' : 'mysql';
  const server = sqlite ? 'sqlite' : await serverVersion(config.database.url);
  const key = createHash('sha256')
    .update(JSON.stringify([FORMAT, server, defs.map((d) => [d.name, d[dialect]]).sort()]))
    .digest('hex')
    .slice(0, 32);
  let template = made.get(key);
  if (!template) {
    template = (async () => {
      const file = join(DIR, `${key}.json`);
      try {
        return JSON.parse(readFileSync(file, 'utf8')) as Template;
      } catch {
        const fresh = await migrated(config, features);
        if (fresh) keep(file, fresh);
        return fresh;
      }
    })();
    made.set(key, template);
  }
  return template;
}

/** Creates the template's tables and rows in the empty database `db` (opened from `url`) as its migrations would. */
export async function fill(db: Database, url: string, template: Template): Promise<void> {
  if (db.dialect === 'sqlite') {
    for (const statement of template.schema) await db.unchecked.run(statement);
    for (const { table, columns, values } of template.rows) {
      const marks = `(${columns.map(() => '?').join(', ')})`;
      const text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${values.map(() => marks).join(', ')}`;
      await db.unchecked.run(text, values.flat().map(bound));
    }
    return;
  }
  const conn = await createConnection({ uri: url, ...CONNECTION, multipleStatements: true });
  try {
    await conn.query(`set foreign_key_checks = 0;\n${template.schema.join(';\n')}`);
    for (const { table, columns, values } of template.rows) {
      await conn.query('insert into ?? (??) values ?', [table, columns, values.map((row) => row.map(bound))]);
    }
  } finally {
    await conn.end();
  }
}
