import { defineEntity, p } from '../../core/table.ts';

/** The chat settings admins change at run time: one row per setting, the value as JSON. */
export const ChatIntegrationSetting = defineEntity({
  name: 'ChatIntegrationSetting',
  tableName: 'chat_integration_settings',
  properties: {
    name: p.string().length(64).primary(),
    value: p.text(),
  },
});

/**
 * The role-sync outbox: "bring this user's chat role in line with the site". A row is inserted (never
 * updated: no gap locks in the role change's transaction) with the role change, and deleted once the
 * chat platform has been told.
 */
export const ChatIntegrationRoleSync = defineEntity({
  name: 'ChatIntegrationRoleSync',
  tableName: 'chat_integration_role_sync',
  indexes: [{ properties: ['userId', 'chatRoleId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    userId: p.integer(),
    chatUserId: p.string().length(64),
    chatRoleId: p.string().length(32),
    attempts: p.integer(),
    /** Epoch milliseconds: retries and rate limits wait for fractions of a second. */
    dueAt: p.bigint().index(),
    lastError: p.string().length(255).nullable(),
    /** Set when the platform refused for good (a 4xx); kept for operators until the pair next syncs. */
    failedAt: p.string().length(19).nullable(),
    createdAt: p.string().length(19),
  },
});

export const entities = [ChatIntegrationSetting, ChatIntegrationRoleSync];
