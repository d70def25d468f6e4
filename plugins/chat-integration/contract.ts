/**
 * The chat-integration feature's contract: what the chat bot reads (users by chat user ID, roles,
 * settings), and the admin-editable settings. Role sync is internal: it listens to the users
 * feature's role events.
 */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { str, strOrNull } from '../../core/schemas.ts';

/** Settings keep their JSON types (decisions.md §2): flags are booleans, staff roles an array. */
export const ChatSettings = Type.Object({
  roleSyncingStatus: Type.Boolean({ description: 'push role changes of linked users to the chat platform' }),
  syncedRoleID: Type.String(),
  ticketStatus: Type.Boolean(),
  ticketCategoryID: Type.String(),
  ticketStaffRoleIDs: Type.Array(Type.String()),
  /** The chat server the bot serves: without it the bot never removes expired temporary roles. */
  guildID: Type.String(),
  /** Whether the bot sets each linked member's nickname to their `realname`. */
  setNicknameStatus: Type.Boolean(),
});
export type ChatSettings = typeof ChatSettings.static;

export const ChatUserRole = Type.Object({ id: str(), name: str(), slug: str(), chatRoleID: str(), expiryDate: str() });

export const ChatUserRow = Type.Object({
  id: str(), username: str(), realname: str(), email: str(), credit: str(), avatar: str('image URL'),
  isVerified: str(), authStatus: str(), creationIP: str(), creationDate: str(), chatUserID: str(),
  roles: Type.Array(ChatUserRole),
});
export type ChatUserRow = typeof ChatUserRow.static;

export const ChatRoleRow = Type.Object({
  id: str(), name: str(), slug: str(), usernameCSS: strOrNull(), badgeCSS: strOrNull(), priority: str(), chatRoleID: str(),
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
