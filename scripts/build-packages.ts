/**
 * npm's prepare (npm install, npm ci): builds the workspace SDK (packages/sdk) and the example
 * plugin packages, which the host's config and tests load built, as an installed package is.
 * Without TypeScript (a production install) only the SDK's JavaScript is built.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { rootDir } from '../core/config.ts';

const tsc = join(rootDir, 'node_modules', 'typescript', 'bin', 'tsc');
const node = (args: string[]) => execFileSync(process.execPath, args, { stdio: 'inherit', cwd: rootDir });

node(['--disable-warning=ExperimentalWarning', 'packages/sdk/build.ts', ...(existsSync(tsc) ? [] : ['--js-only'])]);
if (existsSync(tsc)) for (const example of ['hello-plugin', 'examplepay-gateway']) node([tsc, '-p', join('examples', example)]);
