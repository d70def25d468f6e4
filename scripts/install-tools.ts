/**
 * npm's postinstall: installs the tools that live apart from the project's own dependencies
 * (tools/openapi-typescript, the client type generator, which needs TypeScript 5 beside the
 * project's TypeScript 7). A production install (`--omit=dev`, NODE_ENV=production) skips it.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { rootDir } from '../core/config.ts';

const production = process.env.NODE_ENV === 'production' || (process.env.npm_config_omit ?? '').split(/[\s,]+/).includes('dev');
const npm = process.env.npm_execpath;
if (!production && npm) {
  execFileSync(process.execPath, [npm, 'ci', '--prefix', join(rootDir, 'tools/openapi-typescript'), '--no-audit', '--no-fund'], { stdio: 'inherit' });
}
