/**
 * The chat-integration feature's contract: what the chat bot reads (users by chat user ID, roles,
 * settings), and the admin-editable settings. Role sync is internal: it listens to the users
 * feature's role events.
 */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { GameFields } from '../users/contract.ts';
import { EXAMPLE, dateStr, example, flagStr, idStr, moneyStr, str, strOrNull, usernameStr } from '../../core/schemas.ts';

/** A chat platform id, as the examples show one. */
const CHAT_ID = '123456789012345678';

/** Settings keep their JSON types (decisions.md §2): flags are booleans, staff roles an array. */
export const ChatSettings = Type.Object({
  roleSyncingStatus: Type.Boolean({ description: 'push role changes of linked users to the chat platform' }),
  syncedRoleID: Type.String({ examples: [CHAT_ID] }),
  ticketStatus: Type.Boolean(),
  ticketCategoryID: Type.String({ examples: ['123456789012345679'] }),
  ticketStaffRoleIDs: Type.Array(Type.String({ examples: ['123456789012345680'] })),
  /** The chat server the bot serves: without it the bot never removes expired temporary roles. */
  guildID: Type.String({ examples: ['123456789012345681'] }),
  /** Whether the bot sets each linked member's nickname to their `realname`. */
  setNicknameStatus: Type.Boolean(),
});
export type ChatSettings = typeof ChatSettings.static;

export const ChatUserRole = Type.Object({
  id: idStr(),
  name: example('VIP'),
  slug: example('vip'),
  chatRoleID: example(CHAT_ID),
  expiryDate: dateStr('site time zone; 1000-01-01 00:00:00 = permanent'),
});

export const ChatUserRow = Type.Object({
  id: str(undefined, '7'),
  username: usernameStr(),
  realname: usernameStr(),
  email: str('empty when none', EXAMPLE.email),
  credit: moneyStr('balance, decimal'),
  avatar: str('image URL', 'https://mc-heads.net/avatar/Steve/100'),
  isVerified: flagStr(),
  authStatus: str('1 = two-factor on', '0'),
  creationIP: str(undefined, EXAMPLE.ip),
  creationDate: dateStr(),
  chatUserID: example('223456789012345678'),
  roles: Type.Array(ChatUserRole),
  ...GameFields,
});
export type ChatUserRow = typeof ChatUserRow.static;

export const ChatRoleRow = Type.Object({
  id: idStr(),
  name: example('VIP'),
  slug: example('vip'),
  usernameCSS: strOrNull(undefined, 'color: #55ffff;'),
  badgeCSS: strOrNull(undefined, 'background: #55ffff;'),
  priority: example('10'),
  chatRoleID: example(CHAT_ID),
});
export type ChatRoleRow = typeof ChatRoleRow.static;

export interface ChatIntegrationService {
  /** The user linked to a chat user ID, with roles and avatar. Throws USER_NOT_FOUND. */
  userByChatId(chatUserId: string): Promise<ChatUserRow>;
  roles(): Promise<ChatRoleRow[]>;
  settings(): Promise<ChatSettings>;
  updateSettings(patch: Partial<ChatSettings>): Promise<ChatSettings>;
}

export const chatIntegrationRef = createServiceRef<ChatIntegrationService>('chat-integration');
