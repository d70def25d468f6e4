import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath, resolve } from 'node:path';
import { promisify } from 'node:util';
import { countParam } from '../core/db.ts';
import { empty, join, raw, sql, where } from '../core/sql.ts';
import { joined } from '../core/table.ts';
import { VotesLink } from '../plugins/votes/entities.ts';
import { build } from './helper.ts';

const L = VotesLink;

t.test('values are bound as ?, never written into the text', async (t) => {
  const s = sql`select ${L.c.name} from ${L} where ${L.c.id} = ${7} and ${L.c.name} = ${"x' or 1 = 1 --"}`;
  t.equal(s.text, 'select `name` from `votes_links` where `id` = ? and `name` = ?');
  t.same(s.values, [7, "x' or 1 = 1 --"]);
});

t.test('a list becomes one ? per value; an empty one matches nothing; an empty NOT IN is refused', async (t) => {
  const list = (ids: number[]) => sql`where ${L.c.id} in ${ids}`;
  t.equal(list([1, 2, 3]).text, 'where `id` in (?, ?, ?)');
  t.same(list([1, 2, 3]).values, [1, 2, 3]);
  t.equal(list([4]).text, 'where `id` in (?)');
  t.equal(list([]).text, 'where `id` in (null)');
  t.same(list([]).values, []);
  t.throws(() => sql`where ${L.c.id} not in ${[]}`, /NOT IN/);
  t.equal(sql`where ${L.c.id} not in ${[1]}`.text, 'where `id` not in (?)');
});

t.test('fragments compose: optional conditions, join, raw constants', async (t) => {
  const filter = (name?: string, min?: number) => where(name !== undefined && sql`${L.c.name} = ${name}`, min !== undefined && sql`${L.c.id} >= ${min}`);
  t.equal(filter().text, '');
  t.equal(filter('a').text, 'where `name` = ?');
  const both = sql`select ${L.c.id} from ${L} ${filter('a', 2)} order by ${L.c.id}`;
  t.equal(both.text, 'select `id` from `votes_links` where `name` = ? and `id` >= ? order by `id`');
  t.same(both.values, ['a', 2]);
  t.equal(join([sql`a = ${1}`, sql`b = ${2}`], ' or ').text, 'a = ? or b = ?');
  t.equal(sql`select 1${raw(' FOR UPDATE')}${empty}`.text, 'select 1 FOR UPDATE');
});

t.test('one call site reuses its text while its fragments are the same, and builds it again when they differ', async (t) => {
  const site = (tail: ReturnType<typeof sql>, id: number) => sql`select ${L.c.id} from ${L} where ${L.c.id} = ${id}${tail}`;
  const a = site(empty, 1);
  const b = site(empty, 2);
  t.equal(a.text, b.text);
  t.same(b.values, [2]);
  t.equal(site(raw(' FOR UPDATE'), 3).text, 'select `id` from `votes_links` where `id` = ? FOR UPDATE');
  t.equal(site(sql` and ${L.c.name} = ${'n'}`, 4).text, 'select `id` from `votes_links` where `id` = ? and `name` = ?');
  t.same(site(sql` and ${L.c.name} = ${'n'}`, 4).values, [4, 'n']);
  t.equal(site(empty, 5).text, a.text);
  const lists = (ids: number[]) => sql`where ${L.c.id} in ${ids}`;
  t.equal(lists([1]).text, 'where `id` in (?)');
  t.equal(lists([1, 2]).text, 'where `id` in (?, ?)');
});

t.test('an alias qualifies the columns, and a joined row is read by name', async (t) => {
  const a = L.as('a');
  const b = L.as('b');
  t.equal(L.as('a'), a, 'made once per alias');
  t.equal(
    sql`select ${a.c.name} from ${a} join ${b} on ${b.c.id} = ${a.c.id}`.text,
    'select a.`name` from `votes_links` a join `votes_links` b on b.`id` = a.`id`',
  );
  t.throws(() => L.as('a; drop table x'));
  const pair = joined({ first: a, second: b.optional(), label: sql`upper(${a.c.name})` });
  t.equal(pair.columns.text, 'a.`id`, a.`name`, a.`link`, b.`id`, b.`name`, b.`link`, upper(a.`name`)');
  t.same(pair.read([1, 'x', 'l', 2, 'y', 'm', 'X']), { first: { id: 1, name: 'x', link: 'l' }, second: { id: 2, name: 'y', link: 'm' }, label: 'X' });
  t.same(pair.read([1, 'x', 'l', null, null, null, 'X']).second, undefined, 'a left join that found no row');
});

t.test('on the database: lists, an empty list, a bound limit and offset, a join read by name', async (t) => {
  const app = await build(t, { features: ['votes'] });
  const db = app.db;
  for (const name of ['a', 'b', 'c']) await L.insert(db, { name, link: 'https://example.test/' });
  const names = async (statement: ReturnType<typeof sql>) => (await db.query<{ name: string }>(statement)).map((r) => r.name);
  t.same(await names(sql`select ${L.c.name} from ${L} where ${L.c.name} in ${['a', 'c', 'zz']} order by ${L.c.id}`), ['a', 'c']);
  t.same(await names(sql`select ${L.c.name} from ${L} where ${L.c.name} in ${[]}`), []);
  t.same(await names(sql`select ${L.c.name} from ${L} order by ${L.c.id} limit ${countParam(1)} offset ${countParam(1)}`), ['b']);
  t.same(
    (await L.select(db, sql`where ${L.c.name} <> ${'b'} order by ${L.c.id} desc`)).map((r) => r.name),
    ['c', 'a'],
  );
  const a = L.as('a');
  const b = L.as('b');
  const pair = joined({ first: a, next: b.optional() });
  const rows = await db.queryArrays(sql`select ${pair.columns} from ${a} left join ${b} on ${b.c.id} = ${a.c.id} + 1 order by ${a.c.id}`);
  t.same(
    rows.map((r) => {
      const { first, next } = pair.read(r);
      return [first.name, next?.name];
    }),
    [
      ['a', 'b'],
      ['b', 'c'],
      ['c', undefined],
    ],
  );
  const { affectedRows } = await db.run(sql`update ${L} set ${L.c.link} = ${'https://changed.test/'} where ${L.c.id} in ${[1, 2]}`);
  t.equal(affectedRows, 2);
});

t.test('a statement naming a column its table no longer has fails the typecheck', async (t) => {
  // A table whose `name` was renamed `title`, and a statement that still names `name`.
  const dir = mkdtempSync(joinPath(tmpdir(), 'sqltag-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const core = resolve(import.meta.dirname, '../core');
  writeFileSync(
    joinPath(dir, 'renamed.mts'),
    `import { sql } from '${core}/sql.ts';
import { defineEntity, p } from '${core}/table.ts';
const Link = defineEntity({ name: 'Link', tableName: 'links', properties: { id: p.integer().primary(), title: p.string() } });
export const read = sql\`select \${Link.c.title} from \${Link} where \${Link.c.name} = \${'x'}\`;
`,
  );
  const root = resolve(import.meta.dirname, '..');
  writeFileSync(
    joinPath(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: joinPath(root, 'tsconfig.json'),
      compilerOptions: { typeRoots: [joinPath(root, 'node_modules/@types')] },
      include: [],
      files: ['renamed.mts'],
    }),
  );
  // The compiler's own executable, as `npm run typecheck` finds it: the test runner's loaders
  // would follow a node child and trip over its launcher.
  const tsc = joinPath(root, `node_modules/@typescript/typescript-${process.platform}-${process.arch}/lib/tsc`);
  const failed = await promisify(execFile)(tsc, ['-p', dir]).then(
    () => 'compiled',
    (err: { stdout: string; stderr: string }) => err.stdout || err.stderr,
  );
  // The one error is the statement's: everything else the fixture imports compiles.
  t.match(
    failed,
    /^\S*renamed\.mts\(4,\d+\): error TS2339: Property 'name' does not exist on type 'ColumnsOf<\{ id: Column<number>; title: Column<string>; \}>'\.\s*$/,
  );
});
