import { readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import fp from 'fastify-plugin';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { Static, TSchema } from '@sinclair/typebox';
import { ConfigError, rootDir, validate, type AppConfig } from './config.ts';
import type { Database, MigrationDef } from './db.ts';
import type { EventBus } from './events.ts';
import type { ServiceRef, ServiceRegistry } from './registry.ts';
import type { SettingsService } from './settings.ts';

/** What a feature's register function gets from the host. */
export interface FeatureContext<Options> {
  /** The feature's own options (`plugins.<name>` in config), validated and with defaults. */
  options: Options;
  services: ServiceRegistry;
  events: EventBus;
  db: Database;
  settings: SettingsService;
  log: FastifyBaseLogger;
  /** The environment the server was built with: where secrets come from. */
  env: NodeJS.ProcessEnv;
  /** Where the feature's business metrics go (served at `/metrics` when metrics are enabled). */
  metrics: Registry;
}

export interface FeatureDefinition<S extends TSchema = TSchema> {
  /** The feature's name: its folder, config key, table prefix, registry id prefix and log binding. */
  name: string;
  /** Services of other features this one cannot work without; their features load first. */
  requires?: ServiceRef<unknown>[];
  /** Schema of `plugins.<name>` options beyond `enabled` (defaults come from it). */
  options?: S;
  entities?: object[];
  migrations?: MigrationDef[];
  /** Error codes of this feature's own, with their HTTP status. */
  errors?: Record<string, number>;
  register(app: FastifyInstance, ctx: FeatureContext<Static<S>>): Promise<void>;
}

const FEATURE = Symbol.for('community.feature');

export type FeaturePlugin = FastifyPluginAsync & { [FEATURE]: FeatureDefinition };

/**
 * Declares a feature. The result is a fastify plugin (what @fastify/autoload expects of
 * `plugins/<name>/index.ts`) that still carries its definition for the host to read first.
 */
export function defineFeature<S extends TSchema>(def: FeatureDefinition<S>): FeaturePlugin {
  const requires = [...new Set((def.requires ?? []).map((r) => r.feature))];
  // Encapsulated: what a feature adds (hooks, body parsers, the route tag below) stays its own;
  // peers meet through the registry, not through decorators.
  const plugin = fp(async (app: FastifyInstance) => {
    const ctx = app.featureContext(def.name);
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, feature: def.name };
    });
    await def.register(app, ctx as FeatureContext<Static<S>>);
  }, { name: def.name, dependencies: requires, fastify: '5.x', encapsulate: true }) as unknown as FeaturePlugin;
  plugin[FEATURE] = def as unknown as FeatureDefinition;
  return plugin;
}

export function featureOf(mod: unknown): FeatureDefinition | undefined {
  const candidate = (mod as { default?: unknown })?.default ?? mod;
  return (candidate as Partial<FeaturePlugin>)?.[FEATURE];
}

/**
 * A third-party package may export a plain definition object, so that it needs the host only
 * for types (`import type`) and never loads a second copy of it.
 */
function asFeaturePlugin(mod: unknown): FeaturePlugin | undefined {
  const candidate = (mod as { default?: unknown })?.default ?? mod;
  if (featureOf(candidate)) return candidate as FeaturePlugin;
  const def = candidate as Partial<FeatureDefinition>;
  if (typeof def?.name === 'string' && typeof def.register === 'function') return defineFeature(def as FeatureDefinition);
  return undefined;
}

export interface LoadedFeature {
  def: FeatureDefinition;
  plugin: FeaturePlugin;
  /** Where it came from: `plugins/<name>` or a package. */
  source: 'builtin' | 'package';
  options: unknown;
}

export const builtinDir = join(rootDir, 'plugins');

/** The built-in features' names: the folders of plugins/ that hold an index.ts. */
export function builtinNames(): string[] {
  if (!existsSync(builtinDir)) return [];
  return readdirSync(builtinDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(builtinDir, d.name, 'index.ts')))
    .map((d) => d.name)
    .sort();
}

/**
 * Imports the enabled built-in features and each enabled third-party package named in config.
 * Disabled features are never imported, so nothing of theirs runs.
 */
export async function discoverFeatures(config: AppConfig): Promise<LoadedFeature[]> {
  const found: LoadedFeature[] = [];
  const builtins = builtinNames();
  // A misspelled feature would otherwise boot silently without the feature it meant to set.
  for (const [name, setting] of Object.entries(config.plugins)) {
    if (builtins.includes(name) || setting.package) continue;
    throw new ConfigError(`plugins.${name}: there is no built-in feature of that name (built-in: ${builtins.join(', ')}); a third-party feature needs plugins.${name}.package.`);
  }
  for (const name of builtins) {
    if (config.plugins[name]?.enabled === false) continue;
    const mod = await import(pathToFileURL(join(builtinDir, name, 'index.ts')).href) as { default: FeaturePlugin };
    const def = featureOf(mod);
    if (!def) throw new ConfigError(`plugins/${name}/index.ts does not export a feature made by defineFeature().`);
    if (def.name !== name) throw new ConfigError(`plugins/${name} declares the feature name "${def.name}"; folder and name must match.`);
    found.push({ def, plugin: mod.default, source: 'builtin', options: undefined });
  }
  for (const [name, setting] of Object.entries(config.plugins)) {
    if (!setting.package || !setting.enabled) continue;
    const spec = setting.package.startsWith('.') ? pathToFileURL(resolve(rootDir, setting.package)).href : setting.package;
    let mod: unknown;
    try {
      mod = await import(spec);
    } catch (err) {
      throw new ConfigError(`plugins.${name}.package: cannot import "${setting.package}": ${(err as Error).message}`);
    }
    const plugin = asFeaturePlugin(mod);
    if (!plugin) throw new ConfigError(`plugins.${name}.package: "${setting.package}" does not export a feature definition.`);
    const def = plugin[FEATURE];
    if (def.name !== name) throw new ConfigError(`plugins.${name}.package: the package declares the feature name "${def.name}".`);
    if (found.some((f) => f.def.name === name)) throw new ConfigError(`plugins.${name}.package: a built-in feature already has that name.`);
    found.push({ def, plugin, source: 'package', options: undefined });
  }
  return found;
}

/**
 * Validates the loaded features' options, and stops boot with a sentence naming both sides when
 * an enabled feature requires a disabled or missing one.
 */
export function selectEnabled(loaded: LoadedFeature[], config: AppConfig): LoadedFeature[] {
  const names = new Set(loaded.map((f) => f.def.name));
  const installed = new Set([...builtinNames(), ...Object.keys(config.plugins).filter((n) => config.plugins[n]!.package)]);
  for (const f of loaded) {
    for (const ref of f.def.requires ?? []) {
      if (names.has(ref.feature)) continue;
      throw new ConfigError(installed.has(ref.feature)
        ? `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is disabled (plugins.${ref.feature}.enabled = false). Enable "${ref.feature}" or disable "${f.def.name}".`
        : `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is not installed.`);
    }
    const { enabled: _on, package: _pkg, ...opts } = config.plugins[f.def.name] ?? {};
    f.options = f.def.options ? validate(f.def.options, opts, `plugins.${f.def.name}`) : opts;
  }
  return loaded;
}
