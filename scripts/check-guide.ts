/**
 * `npm run typecheck`'s last part: every ```ts block of docs/writing-a-feature.md is type-checked
 * as a module of a plugin package importing @community-platform/sdk (its built declarations), so
 * the guide cannot drift from the SDK. A failing block is named by its line in the guide.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootDir } from '../core/config.ts';

const GUIDE = 'docs/writing-a-feature.md';
// Under the host's node_modules, so the SDK and @types/node resolve as they do for a package in a host checkout.
const dir = join(rootDir, 'node_modules', '.cache', 'guide-check');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

const text = readFileSync(join(rootDir, GUIDE), 'utf8');
const files: string[] = [];
for (const block of text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
  const line = text.slice(0, block.index).split('\n').length + 1;
  files.push(`line-${line}.ts`);
  writeFileSync(join(dir, `line-${line}.ts`), block[1]!);
}
const examplesConfig = JSON.parse(readFileSync(join(rootDir, 'examples/hello-plugin/tsconfig.json'), 'utf8')) as { compilerOptions: object };
writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...examplesConfig.compilerOptions, noEmit: true, rootDir: '.' }, files }));
try {
  execFileSync(process.execPath, [join(rootDir, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
} catch (err) {
  const out = String((err as { stdout?: string }).stdout ?? err);
  console.error(
    out.replace(
      /(?:\S*\/)?line-(\d+)\.ts\((\d+),(\d+)\)/g,
      (_m, start: string, row: string, col: string) => `${GUIDE}:${Number(start) + Number(row) - 1}:${col}`,
    ),
  );
  process.exit(1);
}
console.log(`${GUIDE}: ${files.length} code blocks type-check against @community-platform/sdk.`);
