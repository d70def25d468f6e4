import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Static, TSchema } from '@sinclair/typebox';
import { ConfigError, rootDir, validate, type AppConfig, type SiteSetting } from './config.ts';
import { consoleHostRef, type ConsoleSection } from './console.ts';
import type { MigrationDef } from './db.ts';
import type { FeatureArchive } from './archive/feature-archive.ts';
import type { FeatureContext } from './feature-context.ts';
import type { ServiceRef } from './registry.ts';
import { compareCodeUnits } from './format.ts';

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
  /**
   * What `npm run export` takes of this feature and `npm run import` puts back (docs/export-format.md):
   * by default every table of `entities` and no files.
   */
  archive?: FeatureArchive<Static<S>>;
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
  return typeof candidate?.name === 'string' && typeof candidate.register === 'function' ? (candidate as FeatureDefinition) : undefined;
}

/**
 * The feature as a Fastify plugin. Encapsulated: what a feature adds (hooks, body parsers, the
 * route tag below) stays its own; peers meet through the registry, not through decorators.
 */
function featurePlugin(f: LoadedFeature): FastifyPluginAsync {
  const { def } = f;
  return fp(
    async (app: FastifyInstance) => {
      const ctx = app.featureContext(def.name);
      app.addHook('onRoute', (route) => {
        route.config = { ...route.config, feature: def.name };
      });
      f.own = await def.register(app, ctx);
    },
    { name: def.name, fastify: '5.x', encapsulate: true },
  );
}

export interface LoadedFeature {
  def: FeatureDefinition;
  /** Where it came from: `plugins/<name>` or a package. */
  source: 'builtin' | 'package';
  options: unknown;
  /** What its register function returned, for its console section. */
  own?: unknown;
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
      throw new ConfigError(
        installed.has(ref.feature)
          ? `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is disabled (plugins.${ref.feature}.enabled = false). Enable ` +
              `"${ref.feature}" or disable "${f.def.name}".`
          : `The "${f.def.name}" feature requires the "${ref.feature}" feature, which is not installed.`,
      );
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
