/**
 * `npm run lint`'s second half: Biome lints but has no line-length rule, so this lists every line of
 * the project's code longer than LIMIT and fails if there is one. Migrations (generated DDL, one
 * statement a string) and the generated client types are left as their generators write them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
const rootDir = join(import.meta.dirname, '..');

const LIMIT = 160;
const FOLDERS = ['core', 'plugins', 'test', 'bench', 'scripts', 'examples', 'packages', 'client'];
const SKIP = (path: string) => /(^|\/)(node_modules|migrations|dist)(\/|$)/.test(path) || path === 'client/schema.d.ts';

const long: string[] = [];
for (const folder of FOLDERS) {
  for (const entry of readdirSync(join(rootDir, folder), { recursive: true, withFileTypes: true })) {
    const path = relative(rootDir, join(entry.parentPath, entry.name));
    if (!entry.isFile() || !/\.(ts|js)$/.test(entry.name) || SKIP(path)) continue;
    readFileSync(join(rootDir, path), 'utf8').split('\n').forEach((line, i) => {
      if (line.length > LIMIT) long.push(`${path}:${i + 1}: ${line.length} characters`);
    });
  }
}
if (long.length) {
  console.error(`Lines over ${LIMIT} characters:\n${long.join('\n')}`);
  process.exit(1);
}
