/**
 * The host's live objects. The host registers them on a well-known symbol before it imports any
 * plugin (core/host-objects.ts), so every copy of this package, wherever npm put it, hands out the
 * same classes and registry helpers: `instanceof DomainError` holds in the host's error handler.
 * Imported before any host (a plugin's own test), it loads the host it is installed in.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { HostObjects } from '../../../core/host-objects.ts';

const KEY = Symbol.for('community-platform.host');

/** The host's folder: COMMUNITY_PLATFORM_ROOT, or the first folder above this package that holds the host. */
export function hostRoot(): string {
  if (process.env.COMMUNITY_PLATFORM_ROOT) return process.env.COMMUNITY_PLATFORM_ROOT;
  for (let dir = realpathSync(dirname(fileURLToPath(import.meta.url))); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (
      existsSync(join(dir, 'core', 'host-objects.ts')) &&
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'community-platform'
    )
      return dir;
  }
  throw new Error('@community-platform/sdk: no community-platform host around this package; install the plugin into a host or set COMMUNITY_PLATFORM_ROOT.');
}

const registered = () => (globalThis as Record<symbol, HostObjects | undefined>)[KEY];

if (!registered()) await import(pathToFileURL(join(hostRoot(), 'core', 'host-objects.ts')).href);

export const host: HostObjects = registered()!;
