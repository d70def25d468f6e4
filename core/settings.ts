import { defineEntity, p } from './table.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { SiteSettingsSchema, validate, type SiteSettings } from './config.ts';
import type { Database } from './db.ts';
import { DomainError } from './errors.ts';
import { isTimeZone } from './format.ts';
import { createServiceRef } from './registry.ts';

export const CoreSetting = defineEntity({
  name: 'CoreSetting',
  tableName: 'core_settings',
  properties: {
    key: p.string().length(64).primary(),
    value: p.text(),
  },
});

/** Site settings: defaults from config, changes in the database, read by every feature. */
export interface SettingsService {
  /** The current settings (cached; changes made by another process show within refreshSeconds). */
  get(): SiteSettings;
  update(patch: Partial<Record<keyof SiteSettings, unknown>>): Promise<SiteSettings>;
}

export const settingsRef = createServiceRef<SettingsService>('core.settings');

export class DbSettings implements SettingsService {
  #current: SiteSettings;
  readonly #defaults: SiteSettings;
  readonly #db: Database;
  #timer?: NodeJS.Timeout;

  constructor(db: Database, defaults: SiteSettings) {
    this.#db = db;
    this.#defaults = defaults;
    this.#current = defaults;
  }

  get(): SiteSettings {
    return this.#current;
  }

  async load(): Promise<void> {
    const rows = await this.#db.query<{ key: string; value: string }>('select `key`, `value` from core_settings');
    const stored: Record<string, unknown> = {};
    for (const row of rows) stored[row.key] = JSON.parse(row.value);
    this.#current = { ...this.#defaults, ...pick(stored, this.#defaults) };
  }

  /** Polls the table so that several server processes on one database agree. */
  startRefresh(seconds: number): void {
    this.#timer = setInterval(() => { this.load().catch(() => undefined); }, seconds * 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async update(patch: Partial<Record<keyof SiteSettings, unknown>>): Promise<SiteSettings> {
    const keys = Object.keys(patch).filter((k) => k in this.#defaults) as (keyof SiteSettings)[];
    let next: SiteSettings;
    try {
      next = validate(SiteSettingsSchema, { ...this.#current, ...pick(patch, this.#defaults) }, '');
    } catch (err) {
      throw new DomainError('VALIDATION_ERROR', (err as Error).message.replace('Invalid setting .', 'Invalid setting '));
    }
    if (!isTimeZone(next.timezone)) throw new DomainError('VALIDATION_ERROR', `timezone: unknown time zone "${next.timezone}"`);
    await this.#db.transaction(async () => {
      for (const key of keys) {
        const value = JSON.stringify(next[key]);
        const { affectedRows } = await this.#db.run('update core_settings set `value` = ? where `key` = ?', [value, key]);
        if (affectedRows === 0) await this.#db.run('insert into core_settings (`key`, `value`) values (?, ?)', [key, value]);
      }
    });
    this.#current = next;
    return next;
  }
}

function pick(source: Record<string, unknown>, shape: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(source).filter(([k]) => k in shape));
}

/** The settings as the admin API writes them (the console's form checks the same). */
export const SettingsBody = Type.Object({
  currency: Type.String({ pattern: '^[A-Z]{3}$', examples: ['USD'] }),
  timezone: Type.String({ description: 'IANA time zone of the timestamps the API sends and takes', examples: ['Europe/Berlin'] }),
  registerLimit: Type.Integer({ minimum: 0, description: 'accounts one IP may register; 0 = no limit', examples: [3] }),
  twoFactorEnabled: Type.Boolean(),
  cashbackPercent: Type.Number({ minimum: 0, maximum: 100, examples: [5] }),
  registrationEmailRequired: Type.Boolean(),
  buyResponseStatus: Type.Union([Type.Literal(200), Type.Literal(201)]),
});

export async function settingsRoutes(app: FastifyInstance, settings: SettingsService): Promise<void> {
  const response = { 200: Type.Object({ status: Type.Literal(true), data: SettingsBody }) };
  app.get('/api/admin/settings', { schema: { tags: ['admin'], summary: 'Site settings', response } }, async () => ({ status: true as const, data: settings.get() }));
  app.patch('/api/admin/settings', {
    schema: { tags: ['admin'], summary: 'Change site settings', body: Type.Partial(SettingsBody, { additionalProperties: false }), response },
  }, async (request) => ({ status: true as const, data: await settings.update(request.body as Partial<SiteSettings>) }));
}
