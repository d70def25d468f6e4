/**
 * A test build's fresh database comes from a migrated template (core/testing-template.ts): it must
 * hold what migrating it would, table for table and row for row, on each dialect.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, freshDatabaseUrl } from './helper.ts';

/** Every table's definition, and the migrations recorded, as the database tells them. */
async function schemaOf(app: FastifyInstance): Promise<{ tables: Record<string, string>; migrations: string[] }> {
  const db = app.db;
  const tables: Record<string, string> = {};
  if (db.dialect === 'sqlite') {
    const rows = await db.unchecked.query<{ name: string; sql: string }>('select name, sql from sqlite_master where sql is not null order by name');
    for (const r of rows) tables[r.name] = r.sql;
  } else {
    const names = await db.unchecked.query<{ name: string }>(
      'select table_name as name from information_schema.tables where table_schema = database() order by table_name',
    );
    for (const { name } of names) {
      const [created] = await db.unchecked.query<{ 'Create Table': string }>(`show create table \`${name}\``);
      // The next id differs once a test has written rows; the definition is what is compared.
      tables[name] = created!['Create Table'].replace(/ AUTO_INCREMENT=\d+/, '');
    }
  }
  const migrations = (await db.unchecked.query<{ name: string }>('select name from core_migrations order by name')).map((r) => r.name);
  return { tables, migrations };
}

t.test('a build from the template has the schema and records of a migrated database', async (t) => {
  const config = { plugins: { hello: { enabled: true } } };
  const migrated = await build(t, { config, databaseUrl: await freshDatabaseUrl(t) });
  for (const round of ['made', 'reused']) {
    const fromTemplate = await build(t, { config });
    const [want, got] = [await schemaOf(migrated), await schemaOf(fromTemplate)];
    t.ok(Object.keys(want.tables).length > 30, `${Object.keys(want.tables).length} tables and indexes`);
    t.same(got, want, `the same tables, indexes and migrations (template ${round}) on ${migrated.db.dialect}`);
  }
});

t.test('a build with fewer features gets a template of its own', async (t) => {
  const votes = await build(t, { features: ['votes'] });
  const migrated = await build(t, { features: ['votes'], databaseUrl: await freshDatabaseUrl(t) });
  t.same(await schemaOf(votes), await schemaOf(migrated));
  t.notOk(
    Object.keys((await schemaOf(votes)).tables).some((name) => name.startsWith('store_')),
    "no other feature's tables",
  );
});
