/**
 * The test kit: builds the host with your plugin on a fresh database (SQLite in memory, or a
 * scratch database on the MySQL/MariaDB server of TEST_MYSQL_URL) and calls it through HTTP
 * (app.inject), as the built-in features' tests do. Works with node:test and tap.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type * as Kit from '../../../core/testing.ts';
import { hostRoot } from './host.ts';

// The kit builds a host, so it is no object a running host hands out: it is read from the host this package is installed in.
const kit: typeof Kit = await import(pathToFileURL(join(hostRoot(), 'core', 'testing.ts')).href);

export const { ADMIN_KEY, call, encode } = kit;
export type { CallOptions, Encoding } from '../../../core/testing.ts';

/** A node:test context (`after`) or a tap one (`teardown`): where the host's shutdown goes. */
export type TestContextLike = { after(fn: () => unknown): void } | { teardown(fn: () => unknown): void };

export interface TestHostOptions {
  /** `plugins.<name>` of config: `{ enabled: true, package: pluginPackage(import.meta.url), ...options }` for yours. */
  plugins: Record<string, Record<string, unknown>>;
  /** The built-in features to run beside it (the others are disabled); none by default. */
  features?: string[];
  /** More config (`site`, …), merged over the test defaults. */
  config?: Record<string, unknown>;
  /** The environment the host is built with (your plugin's secrets). */
  env?: Record<string, string>;
}

export interface TestHost {
  app: FastifyInstance;
  /** One HTTP call with the admin key (or `key`), the body encoded as asked (multipart by default). */
  call(url: string, opts?: Kit.CallOptions): ReturnType<typeof kit.call>;
}

/** Starts the host with the plugins asked; it closes when the test ends. */
export async function startTestHost(t: TestContextLike, opts: TestHostOptions): Promise<TestHost> {
  const teardown = (fn: () => unknown) => ('after' in t ? t.after(fn) : t.teardown(fn));
  const app = await kit.build(
    { teardown },
    {
      features: opts.features ?? [],
      env: opts.env,
      config: { ...opts.config, plugins: opts.plugins },
    },
  );
  return { app, call: (url, callOpts) => kit.call(app, url, callOpts) };
}

/**
 * What `plugins.<name>.package` names for the package a test file belongs to (pass
 * `import.meta.url`): its npm name when it is installed in the host, else its built entry.
 */
export function pluginPackage(from: string): string {
  for (let dir = dirname(fileURLToPath(from)); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; exports?: unknown };
    if (kit.hostResolves(pkg.name)) return pkg.name;
    return join(dir, entryOf(pkg.exports));
  }
  throw new Error(`No package.json above ${from}.`);
}

/** The file a package's `exports` give for `import`. */
function entryOf(exports: unknown): string {
  let entry = exports;
  while (entry && typeof entry === 'object') {
    const map = entry as Record<string, unknown>;
    entry = map['.'] ?? map.import ?? map.default;
  }
  if (typeof entry !== 'string') throw new Error('The package.json has no exports entry for import.');
  return entry;
}
