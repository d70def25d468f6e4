import type { FastifyInstance } from 'fastify';
import { toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import type { ChatIntegrationService } from './contract.ts';
import { ChatSettings, ChatUserParams, ChatUserRow, RoleList, SettingsEnvelope, SettingsPatch } from './schemas.ts';

/** Form flags to booleans; a form cannot send an empty list, so empty ids are dropped (`ticketStaffRoleIDs=` clears it). */
function toSettings(patch: SettingsPatch): Partial<ChatSettings> {
  const { roleSyncingStatus, ticketStatus, ticketStaffRoleIDs, setNicknameStatus, ...ids } = patch;
  return {
    ...ids,
    ...(roleSyncingStatus === undefined ? {} : { roleSyncingStatus: toBool(roleSyncingStatus) }),
    ...(setNicknameStatus === undefined ? {} : { setNicknameStatus: toBool(setNicknameStatus) }),
    ...(ticketStatus === undefined ? {} : { ticketStatus: toBool(ticketStatus) }),
    ...(ticketStaffRoleIDs === undefined ? {} : { ticketStaffRoleIDs: ticketStaffRoleIDs.filter((id) => id !== '') }),
  };
}

export async function chatRoutes(fastify: FastifyInstance, chat: ChatIntegrationService): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const tags = ['chat integration'];

  app.get(
    '/api/integrations/chat/users/:chatUserID',
    {
      schema: { tags, summary: 'The user linked to a chat user ID', params: ChatUserParams, response: { 200: ChatUserRow }, errors: ['USER_NOT_FOUND'] },
    },
    async (request) => chat.userByChatId(request.params.chatUserID),
  );

  app.get(
    '/api/integrations/chat/settings',
    {
      schema: { tags, summary: 'Chat integration settings', response: { 200: ChatSettings } },
    },
    async () => chat.settings(),
  );

  app.get(
    '/api/integrations/chat/roles',
    {
      schema: { tags, summary: 'Roles with their chat role IDs and styles', response: { 200: RoleList } },
    },
    async () => chat.roles(),
  );

  app.get(
    '/api/admin/integrations/chat/settings',
    {
      schema: { tags: ['admin'], summary: 'Chat integration settings', response: { 200: SettingsEnvelope } },
    },
    async () => ({ status: true as const, data: await chat.settings() }),
  );

  app.patch(
    '/api/admin/integrations/chat/settings',
    {
      schema: { tags: ['admin'], summary: 'Change chat integration settings', body: SettingsPatch, response: { 200: SettingsEnvelope } },
    },
    async (request) => ({ status: true as const, data: await chat.updateSettings(toSettings(request.body)) }),
  );
}
