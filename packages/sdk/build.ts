/**
 * Builds the SDK: the host's declarations and this package's (tsc, into dist/types) and its
 * JavaScript (Node's own type stripping, into dist). `--js-only` skips the declarations where
 * TypeScript is not installed (a production image, which runs plugins but builds none).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';

const here = import.meta.dirname;
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
for (const file of readdirSync(join(here, 'src')).filter((f) => f.endsWith('.ts'))) {
  const js = stripTypeScriptTypes(readFileSync(join(here, 'src', file), 'utf8')).replace(/(from\s+'\.\.?\/[^']+)\.ts'/g, "$1.js'");
  writeFileSync(join(dist, file.replace(/\.ts$/, '.js')), js);
}
if (!process.argv.includes('--js-only')) {
  execFileSync(process.execPath, [join(here, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'), '-p', here], { stdio: 'inherit' });
}
