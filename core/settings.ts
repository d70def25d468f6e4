import { defineEntity, p } from './table.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ConfigError, coreSettings, settingsSchema, validate, type SiteSetting, type SiteSettings } from './config.ts';
import type { AuditLog } from './audit.ts';
import type { Database } from './db.ts';
import { DomainError } from './errors.ts';
import { compareCodeUnits, isTimeZone } from './format.ts';
import { createServiceRef } from './registry.ts';
import { sql } from './sql.ts';

export const CoreSetting = defineEntity({
  name: 'CoreSetting',
  tableName: 'core_settings',
  properties: {
    key: p.string().length(64).primary(),
    value: p.text(),
  },
});

const S = CoreSetting.c;

/** Site settings: defaults from config, changes in the database, read by every feature. */
export interface SettingsService {
  /** The current settings (cached; changes made by another process show within refreshSeconds). */
  get(): SiteSettings;
  update(patch: Partial<Record<keyof SiteSettings, unknown>>): Promise<SiteSettings>;
  /** The settings this server has, in order: core's, then each feature's (by feature name). */
  declared(): ReadonlyMap<string, SiteSetting>;
  /**
   * A feature's own values kept beside the site settings (its connection details, secrets sealed
   * by the feature), under `<feature>:<name>`: never in the settings API, refreshed like them.
   */
  kept(key: string): Record<string, unknown> | undefined;
  /** Stores one, in the caller's transaction when there is one; the caller audits the change. */
  keep(key: string, value: Record<string, unknown>): Promise<void>;
}

/**
 * The settings core and the features declare, core's first, then by feature name. Two
 * declarations of one key stop boot: a setting has one owner.
 */
export function declareSettings(features: { name: string; settings?: Record<string, SiteSetting> }[]): Map<string, SiteSetting> {
  const declared = new Map<string, SiteSetting>(Object.entries(coreSettings));
  const owner = new Map([...declared.keys()].map((key) => [key, 'core']));
  for (const { name, settings } of [...features].sort((a, b) => compareCodeUnits(a.name, b.name))) {
    for (const [key, setting] of Object.entries(settings ?? {})) {
      if (owner.has(key)) throw new ConfigError(`The site setting ${key} is declared by both ${owner.get(key)} and the "${name}" feature.`);
      owner.set(key, `the "${name}" feature`);
      declared.set(key, setting);
    }
  }
  return declared;
}

/** The config's `site` block checked against the declared settings, defaults filled in; a key none declares is refused. */
export function siteDefaults(declared: ReadonlyMap<string, SiteSetting>, site: unknown): SiteSettings {
  return validate(settingsSchema(declared), site, 'site') as unknown as SiteSettings;
}

export const settingsRef = createServiceRef<SettingsService>('core.settings');

export class DbSettings implements SettingsService {
  #current: SiteSettings;
  #kept = new Map<string, Record<string, unknown>>();
  readonly #defaults: SiteSettings;
  readonly #declared: ReadonlyMap<string, SiteSetting>;
  readonly #db: Database;
  readonly #audit: AuditLog;
  #timer?: NodeJS.Timeout;

  constructor(db: Database, audit: AuditLog, declared: ReadonlyMap<string, SiteSetting>, defaults: SiteSettings) {
    this.#db = db;
    this.#audit = audit;
    this.#declared = declared;
    this.#defaults = defaults;
    this.#current = defaults;
  }

  get(): SiteSettings {
    return this.#current;
  }

  declared(): ReadonlyMap<string, SiteSetting> {
    return this.#declared;
  }

  async load(): Promise<void> {
    const rows = await CoreSetting.select(this.#db);
    const stored: Record<string, unknown> = {};
    const kept = new Map<string, Record<string, unknown>>();
    for (const row of rows) {
      if (row.key.includes(':')) kept.set(row.key, JSON.parse(row.value));
      else stored[row.key] = JSON.parse(row.value);
    }
    this.#current = { ...this.#defaults, ...pick(stored, this.#defaults) };
    this.#kept = kept;
  }

  kept(key: string): Record<string, unknown> | undefined {
    return this.#kept.get(key);
  }

  async keep(key: string, value: Record<string, unknown>): Promise<void> {
    if (!key.includes(':')) throw new Error(`A kept value's key names its feature (feature:name), not ${key}.`);
    const text = JSON.stringify(value);
    await this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(sql`update ${CoreSetting} set ${S.value} = ${text} where ${S.key} = ${key}`);
      if (affectedRows === 0) await CoreSetting.insert(this.#db, { key, value: text });
    });
    this.#kept.set(key, value);
  }

  /** Polls the table so that several server processes on one database agree. */
  startRefresh(seconds: number): void {
    this.#timer = setInterval(() => {
      this.load().catch(() => undefined);
    }, seconds * 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async update(patch: Partial<Record<keyof SiteSettings, unknown>>): Promise<SiteSettings> {
    const keys = Object.keys(patch).filter((k) => k in this.#defaults) as (keyof SiteSettings)[];
    let next: SiteSettings;
    try {
      next = validate(settingsSchema(this.#declared), { ...this.#current, ...pick(patch, this.#defaults) }, '') as unknown as SiteSettings;
    } catch (err) {
      throw new DomainError('VALIDATION_ERROR', (err as Error).message.replace('Invalid setting .', 'Invalid setting '));
    }
    if (!isTimeZone(next.timezone)) throw new DomainError('VALIDATION_ERROR', `timezone: unknown time zone "${next.timezone}"`);
    await this.#db.transaction(async () => {
      for (const key of keys) {
        const value = JSON.stringify(next[key]);
        const { affectedRows } = await this.#db.run(sql`update ${CoreSetting} set ${S.value} = ${value} where ${S.key} = ${key}`);
        if (affectedRows === 0) await CoreSetting.insert(this.#db, { key, value });
      }
      const changed = keys.filter((k) => JSON.stringify(this.#current[k]) !== JSON.stringify(next[k]));
      if (changed.length) {
        await this.#audit.record({
          action: 'core.settings.update',
          target: { type: 'settings', id: 'site' },
          summary: `Changed site settings: ${changed.join(', ')}`,
          before: Object.fromEntries(changed.map((k) => [k, this.#current[k]])),
          after: Object.fromEntries(changed.map((k) => [k, next[k]])),
        });
      }
    });
    this.#current = next;
    return next;
  }
}

function pick(source: Record<string, unknown>, shape: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([k]) => k in shape));
}

/** The settings as the admin API shows and takes them: every declared one, in order. */
export function settingsBody(settings: SettingsService) {
  return settingsSchema(settings.declared(), { api: true });
}

export async function settingsRoutes(app: FastifyInstance, settings: SettingsService): Promise<void> {
  const body = settingsBody(settings);
  const response = { 200: Type.Object({ status: Type.Literal(true), data: body }) };
  app.get('/api/admin/settings', { schema: { tags: ['admin'], summary: 'Site settings', response } }, async () => ({
    status: true as const,
    data: settings.get(),
  }));
  app.patch(
    '/api/admin/settings',
    {
      schema: { tags: ['admin'], summary: 'Change site settings', body: Type.Partial(body, { additionalProperties: false }), response },
    },
    async (request) => ({ status: true as const, data: await settings.update(request.body as Partial<SiteSettings>) }),
  );
}
