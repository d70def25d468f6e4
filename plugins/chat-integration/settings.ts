import type { AuditLog } from '../../core/audit.ts';
import { Value } from '@sinclair/typebox/value';
import type { Database } from '../../core/db.ts';
import { sql } from '../../core/sql.ts';
import { ChatSettings } from './contract.ts';
import { ChatIntegrationSetting } from './entities.ts';

const KEYS = Object.keys(ChatSettings.properties) as (keyof ChatSettings)[];

/**
 * Chat settings: defaults from the feature's options, changes in its own table. Read from the
 * database each time, so every server process on one database agrees at once.
 */
export class ChatSettingsStore {
  readonly #db: Database;
  readonly #defaults: ChatSettings;

  readonly #audit: AuditLog;

  constructor(db: Database, defaults: ChatSettings, audit: AuditLog) {
    this.#db = db;
    this.#defaults = defaults;
    this.#audit = audit;
  }

  async get(): Promise<ChatSettings> {
    const rows = await ChatIntegrationSetting.select(this.#db);
    const settings: Record<string, unknown> = { ...this.#defaults };
    for (const row of rows) {
      const schema = ChatSettings.properties[row.name as keyof ChatSettings];
      const value = parseJson(row.value);
      // A stored value of the wrong shape (written by hand) falls back to the default instead of breaking the bot.
      if (schema && Value.Check(schema, value)) settings[row.name] = value;
    }
    return settings as ChatSettings;
  }

  /** Whether role changes are to be pushed to the chat platform now. */
  async roleSyncing(): Promise<boolean> {
    return (await this.get()).roleSyncingStatus;
  }

  async update(patch: Partial<ChatSettings>): Promise<ChatSettings> {
    await this.#db.transaction(async () => {
      for (const key of KEYS) {
        if (patch[key] === undefined) continue;
        await this.#db.run(sql`delete from ${ChatIntegrationSetting} where ${ChatIntegrationSetting.c.name} = ${key}`);
        await ChatIntegrationSetting.insert(this.#db, { name: key, value: JSON.stringify(patch[key]) });
      }
      await this.#audit.record({
        action: 'chat.settings.update',
        target: { type: 'settings', id: 'chat' },
        summary: 'Changed the chat integration settings',
        after: patch,
      });
    });
    return this.get();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
