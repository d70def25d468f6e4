/** HTTP shapes of the users feature: rows as api.md shows them, and the conversions into them. */
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, displayTimestamp, flag, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import { row, str, strOrNull } from '../../core/schemas.ts';
import type { Role, RoleAssignment, UserAccount } from './contract.ts';

/**
 * api.md's user profile, plus `realname` (decisions.md §3: the game plugins read it) and the
 * game-side fields the Kotlin wrapper's `User` requires (docs/clients.md). No game reports them
 * to this server yet: they are empty, and `isLogged` is `0`.
 */
export const ProfileRow = row({
  id: str(), username: str(), realname: str(), email: str(), credit: str(),
  isVerified: str(), authStatus: str(), creationIP: str(), creationDate: str(),
  linkedAccounts: Type.Record(Type.String(), Type.String(), { description: 'external account ids by platform; `chat` = chat user ID' }),
  uuid: str('the player\'s game UUID; empty until a game reports it'),
  lastlogin: str('the last login in game; empty until a game reports it'),
  x: str('last position in game; empty until a game reports it'), y: str(), z: str(), world: str(),
  isLogged: str('flag: logged in in game now; 0 until a game reports it'),
});

/** A role a user holds. */
export const UserRoleRow = row({ id: str(), chatRoleID: str(), name: str(), slug: str(), priority: str(), expiryDate: str() });

/** A role as the chat-integration roles list shows it (the admin API answers with this row). */
export const RoleRow = row({
  id: str(), name: str(), slug: str(), usernameCSS: strOrNull(), badgeCSS: strOrNull(), priority: str(), chatRoleID: str(),
});

export function profileRow(user: UserAccount, creditCents: number, timeZone: string): typeof ProfileRow.static {
  return {
    id: String(user.id), username: user.username, realname: user.username, email: user.email ?? '',
    credit: formatMoney(creditCents), isVerified: flag(user.isVerified), authStatus: String(user.authStatus),
    creationIP: user.creationIP, creationDate: displayTimestamp(user.creationDate, timeZone),
    linkedAccounts: user.linkedAccounts,
    uuid: '', lastlogin: '', x: '', y: '', z: '', world: '', isLogged: '0',
  };
}

export function userRoleRow(a: RoleAssignment, timeZone: string): typeof UserRoleRow.static {
  return {
    id: String(a.id), chatRoleID: a.chatRoleID, name: a.name, slug: a.slug, priority: String(a.priority),
    expiryDate: displayTimestamp(a.expiryDate, timeZone),
  };
}

export function roleRow(r: Role): typeof RoleRow.static {
  return {
    id: String(r.id), name: r.name, slug: r.slug, usernameCSS: r.usernameCSS, badgeCSS: r.badgeCSS,
    priority: String(r.priority), chatRoleID: r.chatRoleID,
  };
}

/**
 * A role assignment's expiryDate as sent (`YYYY-MM-DD HH:MM:SS` in the site's time zone) to a
 * stored UTC timestamp. Omitted or empty: undefined (the caller's default). The sentinel means
 * permanent; any other time must lie in the future, since an assignment that is over at once is
 * never what the caller meant.
 */
export function parseExpiry(value: string | undefined, timeZone: string): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const stored = parseClientTimestamp(value.trim(), timeZone);
  if (stored === undefined) throw new DomainError('VALIDATION_ERROR', 'expiryDate must be a date and time written YYYY-MM-DD HH:MM:SS');
  if (stored !== PERMANENT && stored <= now()) throw new DomainError('VALIDATION_ERROR', 'expiryDate lies in the past');
  return stored;
}
