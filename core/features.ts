import { readdirSync, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import fp from 'fastify-plugin';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { Static, TSchema } from '@sinclair/typebox';
import { ConfigError, rootDir, validate, type AppConfig, type SiteSetting } from './config.ts';
import { consoleHostRef, type ConsoleSection } from './console.ts';
import type { Database, MigrationDef } from './db.ts';
import type { EventBus } from './events.ts';
import type { OutboundPolicy } from './outbound.ts';
import type { ServiceRef, ServiceRegistry } from './registry.ts';
import type { SettingsService } from './settings.ts';
import { compareCodeUnits } from './format.ts';

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
  /** Which addresses an address given by an admin or a player (a webhook) may reach; its `lookup` checks at connect time. */
  outbound: OutboundPolicy;
}

export interface FeatureDefinition<S extends TSchema = TSchema, Own = unknown> {
  /** The feature's name: its folder, config key, table prefix, registry id prefix and log binding. */
  name: string;
  /** Services of other features this one cannot work without; their features load first. */
  requires?: ServiceRef<unknown>[];
  /** Schema of `plugins.<name>` options beyond `enabled` (defaults come from it). */
  options?: S;
  entities?: object[];
  migrations?: MigrationDef[];
  /**
   * The error codes this feature's routes answer, with their HTTP status (core has only the generic
   * ones, core/errors.ts). A code several features answer (USER_NOT_FOUND) is declared by its owner;
   * two features may declare one code only with the same status.
   */
  errors?: Record<string, number>;
  /**
   * Site settings this feature reads (`ctx.settings.get()`): defaults from `site.<key>` in config,
   * changed by admins at run time. Add their types to SiteSettings (core/config.ts).
   */
  settings?: Record<string, SiteSetting>;
  /**
   * The events this feature emits that others may offer by name (webhooks), with a line saying
   * when each is emitted. Names start with `<name>.`; their payloads are typed in EventMap.
   */
  events?: Record<string, string>;
  /**
   * Registers routes and provides services. What it returns stays the feature's own: the host
   * hands it only to the feature's console section.
   */
  register(app: FastifyInstance, ctx: FeatureContext<Static<S>>): Promise<Own>;
  /** The feature's sections of the staff console (`/console/<id>`), listed in its menu. */
  console?: ConsoleSection<Static<S>, Own>[];
}

/**
 * Declares a feature: `plugins/<name>/index.ts` (or a third-party package) exports the result as
 * its default. It only types the definition; the host turns it into a Fastify plugin when it loads.
 */
export function defineFeature<S extends TSchema, Own = void>(def: FeatureDefinition<S, Own>): FeatureDefinition {
  return def as unknown as FeatureDefinition;
}

/** A module's feature definition: its default export (or the module itself) when it has a name and a register function. */
export function definitionOf(mod: unknown): FeatureDefinition | undefined {
  const candidate = ((mod as { default?: unknown })?.default ?? mod) as Partial<FeatureDefinition> | undefined;
  return typeof candidate?.name === 'string' && typeof candidate.register === 'function' ? candidate as FeatureDefinition : undefined;
}

/**
 * The feature as a Fastify plugin. Encapsulated: what a feature adds (hooks, body parsers, the
 * route tag below) stays its own; peers meet through the registry, not through decorators.
 */
function featurePlugin(f: LoadedFeature): FastifyPluginAsync {
  const { def } = f;
  return fp(async (app: FastifyInstance) => {
    const ctx = app.featureContext(def.name);
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, feature: def.name };
    });
    f.own = await def.register(app, ctx);
  }, { name: def.name, fastify: '5.x', encapsulate: true });
}

export interface LoadedFeature {
  def: FeatureDefinition;
  /** Where it came from: `plugins/<name>` or a package. */
  source: 'builtin' | 'package';
  options: unknown;
  /** What its register function returned, for its console section. */
  own?: unknown;
}

const builtinDir = join(rootDir, 'plugins');

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
 * Disabled features are not imported here (a tool working on one feature loads only that one);
 * the server reads a disabled built-in feature's definition only for its site settings (settingOwners).
 */
export async function discoverFeatures(config: AppConfig): Promise<LoadedFeature[]> {
  const found: LoadedFeature[] = [];
  const builtins = builtinNames();
  // A misspelled feature would otherwise boot silently without the feature it meant to set.
  for (const [name, setting] of Object.entries(config.plugins)) {
    if (builtins.includes(name) || setting.package) continue;
    throw new ConfigError(`plugins.${name}: there is no built-in feature of that name (built-in: ${builtins.join(', ')}); a third-party feature needs ` +
      `plugins.${name}.package.`);
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
    // A package's `@community-platform/sdk` import reads the host's objects from here.
    const { sdkVersion, sdkRange } = await import('./host-objects.ts');
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
      throw new ConfigError(`The "${name}" plugin (${pkg.name ?? dir}) is built for ${SDK} ${wanted}, but this host provides ${SDK} ${sdkVersion}, ` +
        `which takes plugins built for ${sdkRange}.`);
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

/**
 * The features whose site settings this server has: the running ones, and the disabled built-in
 * ones, whose definitions are imported for their settings only (never registered: nothing of them
 * runs). So a built-in feature's settings keep their values, show and can be set while it is
 * disabled, and the `site` block of config is checked whole. A disabled package is not imported
 * (it may not be installed): a `site` key of it is refused as unknown.
 */
export async function settingOwners(running: LoadedFeature[]): Promise<FeatureDefinition[]> {
  const owners = running.map((f) => f.def);
  for (const name of builtinNames()) {
    if (owners.some((d) => d.name === name)) continue;
    const def = definitionOf(await import(pathToFileURL(join(builtinDir, name, 'index.ts')).href));
    if (def?.settings) owners.push(def);
  }
  return owners;
}

/**
 * Validates the loaded features' options, and stops boot with a sentence naming both sides when
 * an enabled feature requires a disabled or missing one. Returns them in load order: each after
 * the features it requires.
 */
export function selectEnabled(loaded: LoadedFeature[], config: AppConfig): LoadedFeature[] {
  const names = new Set(loaded.map((f) => f.def.name));
  const installed = new Set([...builtinNames(), ...Object.keys(config.plugins).filter((n) => config.plugins[n]!.package)]);
  for (const f of loaded) {
    for (const ref of f.def.requires ?? []) {
      if (names.has(ref.feature)) continue;
      throw new ConfigError(installed.has(ref.feature)
        ? `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is disabled (plugins.${ref.feature}.enabled = false). Enable ` +
          `"${ref.feature}" or disable "${f.def.name}".`
        : `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is not installed.`);
    }
    for (const event of Object.keys(f.def.events ?? {})) {
      if (event.startsWith(`${f.def.name}.`)) continue;
      throw new ConfigError(`The "${f.def.name}" feature declares the event "${event}"; its events' names start with "${f.def.name}.".`);
    }
    const { enabled: _on, package: _pkg, ...opts } = config.plugins[f.def.name] ?? {};
    f.options = f.def.options ? validate(f.def.options, opts, `plugins.${f.def.name}`) : opts;
  }
  return inLoadOrder(loaded);
}

/** Depth-first over `requires`, names in alphabetical order where nothing else decides; refuses a cycle. */
function inLoadOrder(features: LoadedFeature[]): LoadedFeature[] {
  const byName = new Map(features.map((f) => [f.def.name, f]));
  const ordered: LoadedFeature[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (f: LoadedFeature, path: string[]) => {
    const seen = state.get(f.def.name);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new ConfigError(`Features require each other in a circle: ${[...path, f.def.name].join(' → ')}.`);
    state.set(f.def.name, 'visiting');
    for (const ref of f.def.requires ?? []) visit(byName.get(ref.feature)!, [...path, f.def.name]);
    state.set(f.def.name, 'done');
    ordered.push(f);
  };
  for (const f of [...features].sort((a, b) => compareCodeUnits(a.def.name, b.def.name))) visit(f, []);
  return ordered;
}

/**
 * Registers the features once each, in the order selectEnabled gave, then (when the console
 * feature runs) their console sections: last, so a section may look up any feature's service.
 */
export async function registerFeatures(app: FastifyInstance, features: LoadedFeature[]): Promise<void> {
  for (const f of features) await app.register(featurePlugin(f));
  const host = app.services.find(consoleHostRef);
  if (!host) return;
  for (const f of features) {
    for (const section of f.def.console ?? []) {
      await app.register(async (scope) => host.mount(scope, f.def.name, section as ConsoleSection, app.featureContext(f.def.name), f.own));
    }
  }
}
