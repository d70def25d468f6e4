/**
 * Finding the features to run: the enabled built-in ones (plugins/<name>) and the enabled
 * third-party packages named in config. Apart from core/features.ts, which plugins import for
 * defineFeature: importing a package needs the host's objects registered (./host-objects.ts),
 * and those are the host's public surface, defineFeature included.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError, rootDir, type AppConfig } from './config.ts';
import { builtinDir, builtinNames, definitionOf, type LoadedFeature } from './features.ts';
// Registers the host's objects on import, before any package's `@community-platform/sdk` import reads them.
import { sdkRange, sdkVersion } from './host-objects.ts';

/**
 * Imports the enabled built-in features and each enabled third-party package named in config.
 * Disabled features are not imported here (a tool working on one feature loads only that one);
 * the server reads a disabled built-in feature's definition only for its site settings (settingOwners).
 */
export async function discoverFeatures(config: AppConfig): Promise<LoadedFeature[]> {
  const found: LoadedFeature[] = [];
  const builtins = builtinNames();
  // A misspelled feature would otherwise boot silently without the feature it meant to set.
  for (const [name, setting] of Object.entries(config.plugins)) {
    if (builtins.includes(name) || setting.package) continue;
    throw new ConfigError(
      `plugins.${name}: there is no built-in feature of that name (built-in: ${builtins.join(', ')}); a third-party feature needs ` +
        `plugins.${name}.package.`,
    );
  }
  for (const name of builtins) {
    if (config.plugins[name]?.enabled === false) continue;
    const def = definitionOf(await import(pathToFileURL(join(builtinDir, name, 'index.ts')).href));
    if (!def) throw new ConfigError(`plugins/${name}/index.ts does not export a feature made by defineFeature().`);
    if (def.name !== name) throw new ConfigError(`plugins/${name} declares the feature name "${def.name}"; folder and name must match.`);
    found.push({ def, source: 'builtin', options: undefined });
  }
  for (const [name, setting] of Object.entries(config.plugins)) {
    if (!setting.package || !setting.enabled) continue;
    const spec = setting.package.startsWith('.') ? pathToFileURL(resolve(rootDir, setting.package)).href : setting.package;
    let mod: unknown;
    try {
      checkSdkRange(name, import.meta.resolve(spec), sdkVersion, sdkRange);
      mod = await import(spec);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(`plugins.${name}.package: cannot import "${setting.package}": ${(err as Error).message}`);
    }
    const def = definitionOf(mod);
    if (!def) throw new ConfigError(`plugins.${name}.package: "${setting.package}" does not export a feature definition.`);
    if (def.name !== name) throw new ConfigError(`plugins.${name}.package: the package declares the feature name "${def.name}".`);
    if (found.some((f) => f.def.name === name)) throw new ConfigError(`plugins.${name}.package: a built-in feature already has that name.`);
    found.push({ def, source: 'package', options: undefined });
  }
  return found;
}

/**
 * Refuses a package built against an SDK range this host's SDK version is outside of: it would
 * otherwise fail later on a missing or changed export. The range is the package's dependency on
 * `@community-platform/sdk` (a peer dependency, or a plain one), in the package.json above its entry.
 */
function checkSdkRange(name: string, entryURL: string, sdkVersion: string, sdkRange: string): void {
  if (!entryURL.startsWith('file:')) return;
  for (let dir = dirname(fileURLToPath(entryURL)); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as PackageManifest;
    const wanted = pkg.peerDependencies?.[SDK] ?? pkg.dependencies?.[SDK];
    if (wanted && !satisfies(sdkVersion, wanted)) {
      throw new ConfigError(
        `The "${name}" plugin (${pkg.name ?? dir}) is built for ${SDK} ${wanted}, but this host provides ${SDK} ${sdkVersion}, ` +
          `which takes plugins built for ${sdkRange}.`,
      );
    }
    return;
  }
}

const SDK = '@community-platform/sdk';
interface PackageManifest {
  name?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
/** npm's own range matching (semver, a dependency of the host). */
const { satisfies } = createRequire(import.meta.url)('semver') as { satisfies(version: string, range: string): boolean };
