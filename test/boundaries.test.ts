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
