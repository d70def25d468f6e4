/**
 * The house rules that keep features apart, checked on the source: a feature reaches another only
 * through that feature's contract.ts (its service, through the registry), it names in SQL only
 * the tables of its own prefix, and the host never imports a feature.
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { rootDir } from '../core/config.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'test' || name === 'node_modules' ? [] : sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const pluginsDir = join(rootDir, 'plugins');
const features = readdirSync(pluginsDir).filter((f) => statSync(join(pluginsDir, f)).isDirectory());
const IMPORT = /(?:from|import)\s*\(?\s*'([^']+)'/g;
/** A table named after FROM, JOIN, INTO or UPDATE in SQL text. */
const TABLE = /\b(?:from|join|into|update)\s+`?([a-z][a-z0-9_]*)`?/gi;

t.test('a feature imports another feature only through its contract.ts', async (t) => {
  let checked = 0;
  for (const feature of features) {
    for (const file of sources(join(pluginsDir, feature))) {
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = /^\.\.\/([a-z-]+)\/(.+)$/.exec(spec!);
        if (!target || !features.includes(target[1]!) || target[1] === feature) continue;
        checked++;
        t.equal(target[2], 'contract.ts', `${relative(rootDir, file)} imports ${spec}`);
      }
    }
  }
  t.ok(checked > 10, `${checked} imports of other features checked`);
});

t.test('SQL names only tables of the feature it is in', async (t) => {
  const prefixes = features.map((f) => `${f.replaceAll('-', '_')}_`);
  let checked = 0;
  for (const feature of features) {
    const own = `${feature.replaceAll('-', '_')}_`;
    for (const file of sources(join(pluginsDir, feature))) {
      if (file.includes('/migrations/')) continue;
      for (const [, table] of readFileSync(file, 'utf8').matchAll(TABLE)) {
        const owner = prefixes.find((p) => table!.toLowerCase().startsWith(p));
        if (!owner) continue;
        checked++;
        t.equal(owner, own, `${relative(rootDir, file)} names ${table}`);
      }
    }
  }
  t.ok(checked > 50, `${checked} table names checked`);
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
