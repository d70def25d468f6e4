/**
 * Plugin packages: what they import from @community-platform/sdk is the host's own (one registry,
 * one DomainError), and a package built for another SDK range is refused at boot in one sentence.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { rootDir } from '../core/config.ts';
import * as core from '../core/index.ts';
import { build, call, onMysql, scratchDir } from './helper.ts';

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
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: `community-plugin-${name}`,
      version: '1.0.0',
      type: 'module',
      exports: './index.js',
      peerDependencies: { '@community-platform/sdk': range },
    }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `import { defineFeature, DomainError } from '@community-platform/sdk';
export default defineFeature({
  name: '${name}',
  errors: { ${name.toUpperCase()}_FAILED: 409 },
  async register(app) {
    app.get('/api/${name}/fail', async () => { throw new DomainError('${name.toUpperCase()}_FAILED', 'It failed.'); });
  },
});
`,
  );
  return join(dir, 'index.js');
}

t.test("the SDK hands a package the host's own objects", async (t) => {
  // Imported by name as a package does; a variable keeps its declarations (core's, built) out of this program.
  const name = '@community-platform/sdk';
  const sdk = (await import(name)) as typeof core & { sdkVersion: string; sdkRange: string };
  t.equal(sdk.DomainError, core.DomainError, 'one DomainError class');
  t.equal(sdk.sql, core.sql);
  t.equal(sdk.defineEntity, core.defineEntity);
  t.equal(sdk.sdkVersion, '0.1.0');
  t.equal(sdk.sdkRange, '^0.1.0');
});

t.test("a package built for this SDK range loads; its DomainError is answered as the host's", async (t) => {
  const app = await build(t, { features: [], config: { plugins: { current: { enabled: true, package: pluginPackage(t, 'current', '^0.1.0') } } } });
  const res = await call(app, '/api/current/fail');
  t.equal(res.statusCode, 409, res.body);
  t.same(res.json(), { status: false, error: 'CURRENT_FAILED', message: 'It failed.' });
});

t.test('a package built for another SDK range is refused at boot, naming it and both ranges', async (t) => {
  const spec = pluginPackage(t, 'future', '^2.0.0');
  await t.rejects(build(t, { features: [], config: { plugins: { future: { enabled: true, package: spec } } } }), {
    message:
      'The "future" plugin (community-plugin-future) is built for @community-platform/sdk ^2.0.0, but this host provides @community-platform/sdk ' +
      '0.1.0, which takes plugins built for ^0.1.0.',
  });
});

const needsMysql = { skip: !onMysql && 'migration:create needs TEST_MYSQL_URL' };
t.test("migration:create writes a plugin package's next migration, both dialects, importing the SDK", needsMysql, async (t) => {
  // The hello example's source in a folder outside the host, which reaches the SDK as an installed package does.
  const scratch = scratchDir(t);
  mkdirSync(join(scratch, 'node_modules', '@community-platform'), { recursive: true });
  symlinkSync(join(rootDir, 'packages', 'sdk'), join(scratch, 'node_modules', '@community-platform', 'sdk'));
  const pkg = join(scratch, 'hello');
  cpSync(join(rootDir, 'examples', 'hello-plugin'), pkg, { recursive: true, filter: (from) => !/\/(dist|test)$/.test(from) });
  const index = join(pkg, 'src', 'index.ts');
  const column = 'name: p.string().length(64),';
  const withMood = readFileSync(index, 'utf8').replace(column, `${column}\n    mood: p.string().length(16).nullable(),`);
  writeFileSync(index, withMood);

  const { stdout } = await promisify(execFile)(process.execPath, [join(rootDir, 'core/cli/make-migration.ts'), pkg, 'add_mood'], {
    cwd: scratch,
    env: { ...process.env, INIT_CWD: scratch },
  });
  const [file] = readdirSync(join(pkg, 'src', 'migrations')).filter((f) => f.endsWith('_hello_add_mood.ts'));
  t.equal(stdout.trim(), `Wrote hello/src/migrations/${file} (1 SQLite and 1 MySQL statements).`);
  const written = readFileSync(join(pkg, 'src', 'migrations', file!), 'utf8');
  t.match(written, "import { defineMigration } from '@community-platform/sdk';");
  t.match(written, /alter table `hello_greetings` add( column)? `mood`/);
  t.match(readFileSync(join(pkg, 'src', 'migrations', 'index.ts'), 'utf8'), `import m1 from './${file}';`);

  const app = await build(t, { features: [], config: { plugins: { hello: { enabled: true, package: index } } } });
  t.equal((await call(app, '/api/hello/greetings', { body: { name: 'Steve' } })).statusCode, 201, 'the table has its new column');
});
