/**
 * Plugin packages: what they import from @community-platform/sdk is the host's own (one registry,
 * one DomainError), and a package built for another SDK range is refused at boot in one sentence.
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { rootDir } from '../core/config.ts';
import * as core from '../core/index.ts';
import { build, call, scratchDir } from './helper.ts';

/**
 * A package in a folder of its own declaring `range` as its SDK peer, with a copy of the SDK of its
 * own beside it (npm nests one when it cannot share the host's); its feature serves GET /api/<name>/fail.
 */
function pluginPackage(t: Parameters<typeof scratchDir>[0], name: string, range: string): string {
  const scratch = scratchDir(t);
  const sdk = join(scratch, 'node_modules', '@community-platform', 'sdk');
  cpSync(join(rootDir, 'packages', 'sdk'), sdk, { recursive: true, filter: (from) => !from.includes('types') && !from.includes('node_modules') });
  const dir = join(scratch, 'node_modules', `community-plugin-${name}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({
    name: `community-plugin-${name}`, version: '1.0.0', type: 'module', exports: './index.js', peerDependencies: { '@community-platform/sdk': range },
  }));
  writeFileSync(join(dir, 'index.js'), `import { defineFeature, DomainError } from '@community-platform/sdk';
export default defineFeature({
  name: '${name}',
  errors: { ${name.toUpperCase()}_FAILED: 409 },
  async register(app) {
    app.get('/api/${name}/fail', async () => { throw new DomainError('${name.toUpperCase()}_FAILED', 'It failed.'); });
  },
});
`);
  return join(dir, 'index.js');
}

t.test('the SDK hands a package the host\'s own objects', async (t) => {
  const sdk = await import('@community-platform/sdk');
  t.equal(sdk.DomainError, core.DomainError, 'one DomainError class');
  t.equal(sdk.sql, core.sql);
  t.equal(sdk.defineEntity, core.defineEntity);
  t.equal(sdk.sdkVersion, '0.1.0');
  t.equal(sdk.sdkRange, '^0.1.0');
});

t.test('a package built for this SDK range loads; its DomainError is answered as the host\'s', async (t) => {
  const app = await build(t, { features: [], config: { plugins: { current: { enabled: true, package: pluginPackage(t, 'current', '^0.1.0') } } } });
  const res = await call(app, '/api/current/fail');
  t.equal(res.statusCode, 409, res.body);
  t.same(res.json(), { status: false, error: 'CURRENT_FAILED', message: 'It failed.' });
});

t.test('a package built for another SDK range is refused at boot, naming it and both ranges', async (t) => {
  const spec = pluginPackage(t, 'future', '^2.0.0');
  await t.rejects(build(t, { features: [], config: { plugins: { future: { enabled: true, package: spec } } } }), {
    message: 'The "future" plugin (community-plugin-future) is built for @community-platform/sdk ^2.0.0, but this host provides @community-platform/sdk ' +
      '0.1.0, which takes plugins built for ^0.1.0.',
  });
});
