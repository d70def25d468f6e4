import { auditRef } from '../../core/audit.ts';
import { Type } from '@sinclair/typebox';
import { Gauge } from 'prom-client';
import { defineFeature } from '../../core/features.ts';
import { usersRef } from '../users/contract.ts';
import { chatSection } from './console.ts';
import { chatIntegrationRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { ChatRoleClient, RoleSync } from './role-sync.ts';
import { chatRoutes } from './routes.ts';
import { DbChatIntegrationService } from './service.ts';
import { ChatSettingsStore } from './settings.ts';

const options = Type.Object({
  /** The chat user's `avatar`: `{username}` (URL-encoded) and `{id}` are filled in. */
  avatarUrl: Type.String({ default: 'https://mc-heads.net/avatar/{username}/100' }),
  /** Settings until an admin changes them (PATCH /api/admin/integrations/chat/settings). */
  settings: Type.Object(
    {
      roleSyncingStatus: Type.Boolean({ default: false }),
      syncedRoleID: Type.String({ default: '' }),
      ticketStatus: Type.Boolean({ default: false }),
      ticketCategoryID: Type.String({ default: '' }),
      ticketStaffRoleIDs: Type.Array(Type.String(), { default: [] }),
      guildID: Type.String({ default: '' }),
      setNicknameStatus: Type.Boolean({ default: false }),
    },
    { default: {} },
  ),
  roleSync: Type.Object(
    {
      apiBaseUrl: Type.String({ default: 'https://discord.com/api/v10' }),
      /** The chat server (guild) whose member roles are synced; role sync is off while empty. */
      guildId: Type.String({ default: '' }),
      /** The environment variable holding the bot token (a secret: never in config files). */
      botTokenEnv: Type.String({ default: 'CHAT_BOT_TOKEN' }),
      pollMs: Type.Integer({ minimum: 5, default: 5000 }),
      retryBaseMs: Type.Integer({ minimum: 1, default: 1000 }),
      retryMaxMs: Type.Integer({ minimum: 1, default: 15 * 60 * 1000 }),
      maxAttempts: Type.Integer({ minimum: 1, default: 20 }),
      requestTimeoutMs: Type.Integer({ minimum: 100, default: 10000 }),
    },
    { default: {} },
  ),
});

export default defineFeature({
  name: 'chat-integration',
  requires: [usersRef],
  options,
  entities,
  migrations,
  async register(app, { db, events, services, settings, env, metrics, options: opts, log }) {
    const users = services.get(usersRef);
    const store = new ChatSettingsStore(db, opts.settings, services.get(auditRef));
    const chat = new DbChatIntegrationService({ users, services, site: settings, store, avatarUrl: opts.avatarUrl });
    services.provide(chatIntegrationRef, chat);
    await chatRoutes(app, chat);

    const { roleSync } = opts;
    const token = env[roleSync.botTokenEnv];
    if (!token || !roleSync.guildId) {
      log.info(`chat role sync is unavailable: set plugins.chat-integration.roleSync.guildId and the ${roleSync.botTokenEnv} environment variable`);
      return chat;
    }
    const sync = new RoleSync(db, users, store, new ChatRoleClient(roleSync.apiBaseUrl, roleSync.guildId, token, roleSync.requestTimeoutMs), roleSync, log);
    new Gauge({
      name: 'chat_integration_role_sync_backlog',
      help: 'Role changes waiting to reach the chat platform (failed ones excluded).',
      registers: [metrics],
      async collect() {
        this.set(await sync.backlog());
      },
    });
    for (const event of ['users.role.granted', 'users.role.revoked'] as const) {
      events.onCommitting(event, (e) => sync.enqueue(e.userId, e.roleId));
      events.on(event, () => sync.kick());
    }
    // Work left by the last run (a restart, a crash) resumes at boot.
    app.addHook('onReady', async () => sync.kick());
    app.addHook('onClose', async () => sync.stop());
    return chat;
  },
  console: [chatSection],
});
