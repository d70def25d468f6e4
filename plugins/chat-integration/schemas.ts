import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { ChatRoleRow, ChatSettings, ChatUserRow } from './contract.ts';

export const ChatUserParams = Type.Object({ chatUserID: Type.String({ minLength: 1, description: 'chat user ID' }) });

/** A chat platform id (role, channel, category); empty clears it. */
const chatId = () => Type.String({ pattern: '^[A-Za-z0-9_-]{0,64}$' });

export const SettingsPatch = Type.Object({
  roleSyncingStatus: Type.Optional(S.boolish()),
  syncedRoleID: Type.Optional(chatId()),
  ticketStatus: Type.Optional(S.boolish()),
  ticketCategoryID: Type.Optional(chatId()),
  ticketStaffRoleIDs: Type.Optional(Type.Array(chatId(), { maxItems: 100 })),
  guildID: Type.Optional(chatId()),
  setNicknameStatus: Type.Optional(S.boolish()),
});
export type SettingsPatch = typeof SettingsPatch.static;

export const SettingsEnvelope = S.ok({ data: ChatSettings });
export const RoleList = Type.Array(ChatRoleRow);
export { ChatSettings, ChatUserRow };
