/**
 * The house rules that keep features apart, checked on the source: a feature reaches another only
 * through that feature's contract.ts (its service, through the registry), `users`, the ground the
 * others stand on, imports no peer at all (peers add to it through its extension points), a
 * feature names in SQL only the tables of its own prefix, writes every statement with the `sql`
 * tag (whose table and column names come from its own entities.ts, the only ones it may import),
 * and the host never imports a feature.
 */
import t from 'tap';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { rootDir } from '../core/config.ts';
import type { Database } from '../core/db.ts';
import { count, fields, sql } from '../core/sql.ts';
import { VotesLink } from '../plugins/votes/entities.ts';
import { scratchDir } from './helper.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'test' || name === 'node_modules' ? [] : sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:from|import)\s*\(?\s*'([^']+)'/g;
/** A table named after FROM, JOIN, INTO or UPDATE in SQL text. */
const TABLE = /\b(?:from|join|into|update)\s+`?([a-z][a-z0-9_]*)`?/gi;

const featuresIn = (pluginsDir: string) => readdirSync(pluginsDir).filter((f) => statSync(join(pluginsDir, f)).isDirectory());

/** Features that import no peer, not even a contract: everything else stands on them. */
const GROUND = ['users'];

/**
 * Imports of another feature's files other than its contract.ts, and any import of a peer by a
 * feature in `ground`; with how many cross-feature imports were looked at.
 */
function importViolations(pluginsDir: string, ground: string[] = GROUND): { checked: number; violations: string[] } {
  const features = featuresIn(pluginsDir);
  const violations: string[] = [];
  let checked = 0;
  for (const feature of features) {
    for (const file of sources(join(pluginsDir, feature))) {
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = /^\.\.\/([a-z-]+)\/(.+)$/.exec(spec!);
        if (!target || !features.includes(target[1]!) || target[1] === feature) continue;
        checked++;
        if (target[2] !== 'contract.ts' || ground.includes(feature)) violations.push(`${relative(pluginsDir, file)} imports ${spec}`);
      }
    }
  }
  return { checked, violations };
}

/**
 * A statement given to the database as a hand-written string instead of a `sql` template, or
 * through `db.unchecked`, the text-taking methods kept for tests and tools.
 */
const STRING_STATEMENT = /\.(?:query|queryArrays|run)(?:<[^>]*>)?\(\s*['"`]|\.select\([^,()]+,\s*['"`]|\.unchecked\b/g;
const STATEMENT = /\.(?:query|queryArrays|run|select)(?:<[^>]*>)?\(/g;

/** Statements of features written as strings, and how many statements were looked at. */
function stringStatements(pluginsDir: string): { checked: number; violations: string[] } {
  const violations: string[] = [];
  let checked = 0;
  for (const feature of featuresIn(pluginsDir)) {
    for (const file of sources(join(pluginsDir, feature))) {
      if (file.includes('/migrations/')) continue;
      const text = readFileSync(file, 'utf8');
      checked += [...text.matchAll(STATEMENT)].length;
      for (const [found] of text.matchAll(STRING_STATEMENT)) violations.push(`${relative(pluginsDir, file)}: ${found}`);
    }
  }
  return { checked, violations };
}

/** Tables of another feature named in a feature's SQL, and how many table names were looked at. */
function tableViolations(pluginsDir: string): { checked: number; violations: string[] } {
  const features = featuresIn(pluginsDir);
  const prefixes = features.map((f) => `${f.replaceAll('-', '_')}_`);
  const violations: string[] = [];
  let checked = 0;
  for (const feature of features) {
    const own = `${feature.replaceAll('-', '_')}_`;
    for (const file of sources(join(pluginsDir, feature))) {
      if (file.includes('/migrations/')) continue;
      for (const [, table] of readFileSync(file, 'utf8').matchAll(TABLE)) {
        const owner = prefixes.find((p) => table!.toLowerCase().startsWith(p));
        if (!owner) continue;
        checked++;
        if (owner !== own) violations.push(`${relative(pluginsDir, file)} names ${table}`);
      }
    }
  }
  return { checked, violations };
}

t.test('a feature imports another feature only through its contract.ts, and users none at all', async (t) => {
  const { checked, violations } = importViolations(join(rootDir, 'plugins'));
  t.same(violations, []);
  t.ok(checked > 10, `${checked} imports of other features checked`);
});

t.test('SQL names only tables of the feature it is in, through the sql tag', async (t) => {
  // Statements name their tables through the table descriptions (`${StoreProduct}`) now: a
  // name written out in SQL text is the exception, checked here against the feature's prefix.
  t.same(tableViolations(join(rootDir, 'plugins')).violations, []);
  const { checked, violations } = stringStatements(join(rootDir, 'plugins'));
  t.same(violations, [], 'every statement is a sql template');
  t.ok(checked > 100, `${checked} statements checked`);
});

/**
 * What features get of the database takes a `sql` statement and nothing else, and the rows'
 * type comes from the statement. Checked by `npm run typecheck`, which covers this file: each
 * `@ts-expect-error` fails it once the call it marks compiles.
 */
export async function onlyTheTag(db: Database): Promise<number> {
  // @ts-expect-error a plain string is no statement
  await db.query('select 1');
  // @ts-expect-error
  await db.queryArrays('select 1');
  // @ts-expect-error
  await db.run('delete from votes_links');
  // @ts-expect-error
  await VotesLink.select(db, 'where id = 1');
  // @ts-expect-error a row type written at the call is not the statement's
  await db.query<{ n: number }>(sql`select count(*) as n from ${VotesLink}`);
  const [row] = await db.query(sql`select ${fields({ n: count(), name: VotesLink.c.name })} from ${VotesLink}`);
  // @ts-expect-error the row has only the fields its select list names
  void row?.link;
  const name: string | undefined = row?.name;
  return (row?.n ?? 0) + (name?.length ?? 0);
}

t.test('no query method features use takes a plain string, and no feature, example or package uses the unchecked ones', async (t) => {
  t.type(onlyTheTag, 'function', 'the type-level checks above compile (npm run typecheck)');
  let checked = 0;
  const violations: string[] = [];
  for (const dir of ['examples', 'packages/sdk/src']) {
    for (const file of sources(join(rootDir, dir))) {
      checked++;
      for (const [found] of readFileSync(file, 'utf8').matchAll(STRING_STATEMENT)) violations.push(`${relative(rootDir, file)}: ${found}`);
    }
  }
  t.same(violations, []);
  t.ok(checked > 5, `${checked} files of examples and packages checked`);
});

/**
 * The tests that may still hand the database text of their own (`db.unchecked`), how many times,
 * and why: each looks at or changes the schema itself, or names its tables at run time, which no
 * table description covers. Every other statement in tests is a `sql` template over the tables'
 * column objects, so a renamed property fails the typecheck there as in the features.
 */
const UNCHECKED_IN_TESTS: Record<string, { most: number; why: string }> = {
  'test/db.test.ts': { most: 30, why: "the data layer's own test, of the unchecked methods among others" },
  'test/fuzz/digest.ts': { most: 4, why: 'every table and column as the schema has them (information_schema, sqlite_master)' },
  'test/features.test.ts': { most: 3, why: "tables as the schema has them, and the migrator's core_migrations" },
  'test/testing-template.test.ts': { most: 4, why: 'every table as the schema has it, from the template and migrated' },
  'test/migration-lock.test.ts': { most: 2, why: "the migrator's lock table, which has no table description" },
  'test/hardening.test.ts': { most: 1, why: 'drops a table to make the server fail' },
  'plugins/bazaar/test/bazaar.test.ts': { most: 3, why: 'takes the schema back to before a migration' },
  'plugins/support/test/catalogue.test.ts': { most: 2, why: 'takes the schema back to before a migration' },
  'plugins/console/test/size.test.ts': { most: 6, why: "explain: the plans of the pages' statements" },
  'plugins/delivery/test/plugin-http.test.ts': { most: 2, why: "explain: the plan of the poll's statement" },
  'test/fixtures.ts': { most: 2, why: 'snapshot and rowCount: tables named by the caller, any feature' },
  'test/backup.test.ts': { most: 1, why: 'every table of a restored database, by name' },
  'test/idempotency.test.ts': { most: 1, why: 'counts rows of tables named by each case' },
  'test/fixtures/echo-plugin.ts': { most: 3, why: 'probes of the connection: select 1, a session setting, a write that meets a held lock' },
};

/** Files under `dir` (relative to `root`) of every test folder: test/ and each plugins/<feature>/test/. */
function testSources(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : walk(path);
      return name.endsWith('.ts') ? [path] : [];
    });
  const dirs = [join(root, 'test')];
  if (statSync(join(root, 'plugins'), { throwIfNoEntry: false })?.isDirectory()) {
    for (const feature of featuresIn(join(root, 'plugins'))) dirs.push(join(root, 'plugins', feature, 'test'));
  }
  return dirs.filter((d) => statSync(d, { throwIfNoEntry: false })?.isDirectory()).flatMap(walk);
}

/** Test files using `db.unchecked` beyond what `allowed` grants them, and how many files were read. */
function uncheckedInTests(root: string, allowed = UNCHECKED_IN_TESTS): { checked: number; violations: string[] } {
  const violations: string[] = [];
  let checked = 0;
  for (const file of testSources(root)) {
    const name = relative(root, file);
    if (name === 'test/boundaries.test.ts') continue;
    checked++;
    const found = [...readFileSync(file, 'utf8').matchAll(/\.unchecked\b/g)].length;
    const most = allowed[name]?.most ?? 0;
    if (found > most) violations.push(`${name}: ${found} db.unchecked (at most ${most}): write the sql tag with the tables' column objects`);
  }
  return { checked, violations };
}

t.test('tests write their statements with the sql tag too, but for a short list of schema lookups', async (t) => {
  const { checked, violations } = uncheckedInTests(rootDir);
  t.same(violations, []);
  t.ok(checked > 100, `${checked} test files checked`);
});

t.test('the checks find a planted violation', async (t) => {
  const dir = scratchDir(t);
  mkdirSync(join(dir, 'alpha'));
  mkdirSync(join(dir, 'beta'));
  writeFileSync(join(dir, 'beta', 'contract.ts'), 'export const betaRef = 1;\n');
  writeFileSync(join(dir, 'beta', 'service.ts'), 'export class BetaService {}\n');
  writeFileSync(
    join(dir, 'alpha', 'service.ts'),
    [
      "import { betaRef } from '../beta/contract.ts';",
      "import { BetaService } from '../beta/service.ts';",
      "const sql = 'select id from beta_items join alpha_things on 1 = 1';",
      "await db.query('select id from alpha_things where id = ?', [1]);",
      "await db.unchecked.run('delete from alpha_things');",
    ].join('\n'),
  );
  t.same(importViolations(dir).violations, ['alpha/service.ts imports ../beta/service.ts']);
  t.same(tableViolations(dir).violations, ['alpha/service.ts names beta_items']);
  t.same(stringStatements(dir).violations, ["alpha/service.ts: .query('", 'alpha/service.ts: .unchecked', "alpha/service.ts: .run('"]);
  const root = scratchDir(t);
  mkdirSync(join(root, 'plugins', 'alpha', 'test'), { recursive: true });
  mkdirSync(join(root, 'test'));
  writeFileSync(join(root, 'plugins', 'alpha', 'test', 'things.test.ts'), "await app.db.unchecked.query('select id from alpha_things');\n");
  writeFileSync(join(root, 'test', 'db.test.ts'), 'await db.unchecked.run(a);\nawait db.unchecked.run(b);\n');
  t.same(
    uncheckedInTests(root, { 'test/db.test.ts': { most: 1, why: 'planted' } }).violations.map((v) => v.split(':')[0]),
    ['test/db.test.ts', 'plugins/alpha/test/things.test.ts'],
    'a test beyond its allowance and one with none',
  );
});

t.test('users importing a peer contract is found', async (t) => {
  const dir = scratchDir(t);
  for (const feature of ['users', 'credits']) mkdirSync(join(dir, feature));
  writeFileSync(join(dir, 'credits', 'contract.ts'), 'export const creditsRef = 1;\n');
  writeFileSync(join(dir, 'credits', 'index.ts'), "import { usersRef } from '../users/contract.ts';\n");
  writeFileSync(join(dir, 'users', 'contract.ts'), 'export const usersRef = 1;\n');
  writeFileSync(join(dir, 'users', 'console.ts'), "import { creditsRef } from '../credits/contract.ts';\n");
  t.same(importViolations(dir).violations, ['users/console.ts imports ../credits/contract.ts'], 'users may not, credits may');
});

t.test('the host imports no feature', async (t) => {
  let checked = 0;
  for (const file of sources(join(rootDir, 'core'))) {
    checked++;
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      t.notMatch(spec!, /(^|\/)plugins\//, `${relative(rootDir, file)} imports ${spec}`);
    }
  }
  t.ok(checked > 10, `${checked} host files checked`);
});

t.test("tests import no other feature's tests and nothing of the bench", async (t) => {
  const testFiles = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : testFiles(path);
      return name.endsWith('.ts') ? [path] : [];
    });
  const pluginsDir = join(rootDir, 'plugins');
  let checked = 0;
  for (const feature of featuresIn(pluginsDir)) {
    const dir = join(pluginsDir, feature, 'test');
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) continue;
    for (const file of testFiles(dir)) {
      checked++;
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        t.notMatch(spec!, /^\.\.\/\.\.\/(?![.])[a-z-]+\/test\//, `${relative(rootDir, file)} imports ${spec}`);
        t.notMatch(spec!, /(^|\/)bench\//, `${relative(rootDir, file)} imports ${spec}`);
      }
    }
  }
  for (const file of testFiles(join(rootDir, 'test'))) {
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) t.notMatch(spec!, /(^|\/)bench\//, `${relative(rootDir, file)} imports ${spec}`);
  }
  t.ok(checked > 20, `${checked} feature test files checked`);
});
