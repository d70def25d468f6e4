/**
 * `npm run plugin:new -- <name> [folder]`: a new plugin package, community-plugin-<name>, in the
 * folder (default: where the command was typed). It has a table and its migration, routes, a
 * console section and a test through the SDK's test kit; it builds (`npm run build`), packs
 * (`npm pack`), installs into the host and passes its test as written. Build it inside a host
 * checkout: its TypeScript and the SDK's declarations come from the host's node_modules.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { rootDir } from '../core/config.ts';

const [name, where, ...extra] = process.argv.slice(2);
if (!name || !/^[a-z][a-z0-9-]{0,30}$/.test(name) || extra.length) {
  console.error('usage: npm run plugin:new -- <name: lowercase letters, digits and dashes> [folder]');
  process.exit(2);
}
const pkgName = `community-plugin-${name}`;
const dir = resolve(process.env.INIT_CWD ?? process.cwd(), where ?? pkgName);
if (existsSync(dir)) {
  console.error(`${dir} exists already.`);
  process.exit(1);
}
const sdk = JSON.parse(readFileSync(join(rootDir, 'packages/sdk/package.json'), 'utf8')) as { version: string };
const prefix = name.replaceAll('-', '_');
const table = `${prefix}_entries`;
const Entity = `${name
  .split('-')
  .map((w) => w[0]!.toUpperCase() + w.slice(1))
  .join('')}Entry`;
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const migration = `${stamp}_${prefix}_init`;

const files: Record<string, string> = {
  'package.json': `${JSON.stringify(
    {
      name: pkgName,
      version: '0.1.0',
      description: `The ${name} feature for community-platform.`,
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, './package.json': './package.json' },
      files: ['dist'],
      scripts: { build: 'tsc -p .', prepack: 'tsc -p .', test: 'node --test "test/**/*.test.ts"' },
      peerDependencies: { '@community-platform/sdk': `^${sdk.version}` },
    },
    null,
    2,
  )}\n`,
  'tsconfig.json': readFileSync(join(rootDir, 'examples/hello-plugin/tsconfig.json'), 'utf8'),
  'src/index.ts': `/**
 * The ${name} feature: entries in its own table (${table}), served under /api/${name}/entries,
 * with a section of the staff console. Enable it in the host's config:
 *   "plugins": { "${name}": { "enabled": true, "package": "${pkgName}" } }
 */
import { defineEntity, defineFeature, DomainError, p, sql, Type, type ConsoleSection } from '@community-platform/sdk';
import { migrations } from './migrations/index.ts';

/** Its table; after changing it, \`npm run migration:create -- <this folder> <what>\` in the host writes the migration. */
const ${Entity} = defineEntity({
  name: '${Entity}',
  tableName: '${table}',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
  },
});
const E = ${Entity}.c;

const Entry = Type.Object({ id: Type.String(), name: Type.String() });
const NewEntry = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) });

const section: ConsoleSection = {
  id: '${name}',
  title: '${name}',
  order: 90,
  pages(pages, { db }) {
    const list = async (errors?: Record<string, string>, values?: Record<string, string>) => ({
      title: '${name}', status: errors ? 422 : 200,
      blocks: [
        {
          kind: 'table' as const, caption: 'Entries', columns: [{ key: 'name', label: 'Name' }],
          rows: (await ${Entity}.select(db, sql\`order by \${E.id}\`)).map((r) => ({ name: r.name })),
        },
        { kind: 'form' as const, id: 'new-entry', title: 'New entry', action: pages.base, submit: 'Add', errors, values,
          fields: [{ name: 'name', label: 'Name', required: true }] },
      ],
    });
    pages.get('', async () => list());
    pages.post('', async ({ body, invalid, form }) => {
      if (invalid) return list(invalid, form);
      await ${Entity}.insert(db, { name: (body as { name: string }).name });
      return { redirect: pages.base, notice: 'Entry added.' };
    }, { body: NewEntry });
  },
};

export default defineFeature({
  name: '${name}',
  errors: { ${prefix.toUpperCase()}_ENTRY_NOT_FOUND: 404 },
  entities: [${Entity}],
  migrations,
  async register(app, { db }) {
    app.get('/api/${name}/entries', { schema: { tags: ['${name}'], response: { 200: Type.Array(Entry) } } },
      async () => (await ${Entity}.select(db, sql\`order by \${E.id}\`)).map((r) => ({ id: String(r.id), name: r.name })));
    app.get('/api/${name}/entries/:id', {
      schema: {
        tags: ['${name}'], params: Type.Object({ id: Type.Integer({ minimum: 1 }) }), response: { 200: Entry },
        errors: ['${prefix.toUpperCase()}_ENTRY_NOT_FOUND'],
      },
    }, async (request) => {
      const { id } = request.params as { id: number };
      const row = await ${Entity}.find(db, id);
      if (!row) throw new DomainError('${prefix.toUpperCase()}_ENTRY_NOT_FOUND', \`No entry with ID \${id}.\`);
      return { id: String(row.id), name: row.name };
    });
    app.post('/api/${name}/entries', {
      schema: { tags: ['${name}'], body: NewEntry, response: { 201: Type.Object({ status: Type.Literal(true), id: Type.String() }) } },
    }, async (request, reply) => {
      const id = await ${Entity}.insert(db, { name: (request.body as { name: string }).name });
      return reply.code(201).send({ status: true, id: String(id) });
    });
  },
  console: [section],
});
`,
  [`src/migrations/${migration}.ts`]: `import { defineMigration } from '@community-platform/sdk';

export default defineMigration({
  name: '${migration}',
  sqlite: [
    'create table \`${table}\` (\`id\` integer not null primary key autoincrement, \`name\` text not null)',
  ],
  mysql: [
    'create table \`${table}\` (\`id\` int unsigned not null auto_increment primary key, \`name\` varchar(64) not null) ' +
      'default character set utf8mb4 engine = InnoDB',
  ],
});
`,
  'src/migrations/index.ts': `// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './${migration}.ts';

export const migrations = [m0];
`,
  [`test/${name}.test.ts`]: `/** The ${name} feature through the host (SQLite, or MariaDB with TEST_MYSQL_URL), loaded as it is installed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pluginPackage, startTestHost } from '@community-platform/sdk/testing';

const plugins = { '${name}': { enabled: true, package: pluginPackage(import.meta.url) } };

test('entries are stored in its table and served under /api/${name}', async (t) => {
  const host = await startTestHost(t, { plugins });
  const res = await host.call('/api/${name}/entries', { body: { name: 'First' } });
  assert.equal(res.statusCode, 201, res.body);
  assert.deepEqual((await host.call('/api/${name}/entries')).json(), [{ id: '1', name: 'First' }]);
  assert.deepEqual((await host.call('/api/${name}/entries/1')).json(), { id: '1', name: 'First' });
});

test('bad input and a missing entry answer with their code and change nothing', async (t) => {
  const host = await startTestHost(t, { plugins });
  let res = await host.call('/api/${name}/entries', { body: { name: '' } });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().error, 'VALIDATION_ERROR');
  res = await host.call('/api/${name}/entries/9');
  assert.equal(res.statusCode, 404);
  assert.equal(res.json().error, '${prefix.toUpperCase()}_ENTRY_NOT_FOUND');
  assert.deepEqual((await host.call('/api/${name}/entries')).json(), []);
});
`,
};
for (const [path, text] of Object.entries(files)) {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
}
const shown = relative(process.env.INIT_CWD ?? process.cwd(), dir) || '.';
console.log(`Wrote ${pkgName} in ${shown}: npm run build, npm test and npm pack there; install the tarball into the host with npm install.`);
