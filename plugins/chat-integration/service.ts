import { DomainError } from '../../core/errors.ts';
import type { ServiceRegistry } from '../../core/registry.ts';
import { displayTimestamp, flag, formatMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { creditsRef } from '../credits/contract.ts';
import { NO_GAME_FIELDS, type UserAccount, type UsersService } from '../users/contract.ts';
import type { ChatIntegrationService, ChatRoleRow, ChatSettings, ChatUserRow } from './contract.ts';
import type { ChatSettingsStore } from './settings.ts';

export interface ChatServiceDeps {
  users: UsersService;
  /** For the optional credits peer, looked up when a user is shown (it may be switched off). */
  services: ServiceRegistry;
  site: SettingsService;
  store: ChatSettingsStore;
  /** Avatar URL with `{username}` and `{id}` placeholders. */
  avatarUrl: string;
}

export class DbChatIntegrationService implements ChatIntegrationService {
  readonly #deps: ChatServiceDeps;

  constructor(deps: ChatServiceDeps) {
    this.#deps = deps;
  }

  #avatar(user: UserAccount): string {
    return this.#deps.avatarUrl.replaceAll('{username}', encodeURIComponent(user.username)).replaceAll('{id}', String(user.id));
  }

  async userByChatId(chatUserId: string): Promise<ChatUserRow> {
    const { users, services, site } = this.#deps;
    const user = await users.findByLinkedAccount('chat', chatUserId);
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user is linked to the chat user ID ${chatUserId}.`);
    const credits = services.find(creditsRef);
    const [roles, balance] = await Promise.all([users.rolesOf(user.id), credits ? credits.balance(user.id) : 0]);
    const timezone = site.get().timezone;
    return {
      id: String(user.id),
      username: user.username,
      realname: user.username,
      email: user.email ?? '',
      credit: formatMoney(balance),
      avatar: this.#avatar(user),
      isVerified: flag(user.isVerified),
      authStatus: String(user.authStatus),
      creationIP: user.creationIP,
      creationDate: displayTimestamp(user.creationDate, timezone),
      chatUserID: user.linkedAccounts.chat ?? chatUserId,
      roles: roles.map((r) => ({
        id: String(r.id),
        name: r.name,
        slug: r.slug,
        chatRoleID: r.chatRoleID,
        expiryDate: displayTimestamp(r.expiryDate, timezone),
      })),
      ...NO_GAME_FIELDS,
    };
  }

  async roles(): Promise<ChatRoleRow[]> {
    return (await this.#deps.users.listRoles()).map((r) => ({
      id: String(r.id),
      name: r.name,
      slug: r.slug,
      usernameCSS: r.usernameCSS,
      badgeCSS: r.badgeCSS,
      priority: String(r.priority),
      chatRoleID: r.chatRoleID,
    }));
  }

  settings(): Promise<ChatSettings> {
    return this.#deps.store.get();
  }

  updateSettings(patch: Partial<ChatSettings>): Promise<ChatSettings> {
    return this.#deps.store.update(patch);
  }
}
