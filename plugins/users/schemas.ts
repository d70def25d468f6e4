/** HTTP shapes of the users feature: rows as api.md shows them, and the conversions into them. */
import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, displayTimestamp, flag, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import { EXAMPLE, dateStr, example, flagStr, idStr, moneyStr, row, str, strOrNull, usernameStr } from '../../core/schemas.ts';
import { GameFields, NO_GAME_FIELDS, type Profile, type Role, type RoleAssignment } from './contract.ts';
import type { RoleFields } from './records.ts';

/**
 * api.md's user profile, plus `realname` (decisions.md §3: the game plugins read it) and the
 * game-side fields the Kotlin wrapper's `User` requires (GameFields).
 */
export const ProfileRow = row({
  id: idStr(),
  username: usernameStr(),
  realname: usernameStr(),
  email: str('empty when none', EXAMPLE.email),
  credit: moneyStr('balance, decimal'),
  isVerified: flagStr(),
  authStatus: str('1 = two-factor on', '0'),
  creationIP: str(undefined, EXAMPLE.ip),
  creationDate: dateStr(),
  linkedAccounts: Type.Record(Type.String(), Type.String(), {
    description: 'external account ids by platform; `chat` = chat user ID',
    examples: [{ chat: '123456789012345678' }],
  }),
  ...GameFields,
});

/** A role a user holds. */
export const UserRoleRow = row({
  id: idStr(),
  chatRoleID: example('123456789012345678'),
  name: example('VIP'),
  slug: example('vip'),
  priority: example('10'),
  expiryDate: dateStr('site time zone; 1000-01-01 00:00:00 = permanent'),
});

/** A role as the chat-integration roles list shows it (the admin API answers with this row). */
export const RoleRow = row({
  id: idStr(),
  name: example('VIP'),
  slug: example('vip'),
  usernameCSS: strOrNull(undefined, 'color: #55ffff;'),
  badgeCSS: strOrNull(undefined, 'background: #55ffff;'),
  priority: example('10'),
  chatRoleID: example('123456789012345678'),
});

/** A profile as the API shows it; `credit` is the credits feature's field, "0.00" while it is off. */
export function profileRow(user: Profile, timeZone: string): typeof ProfileRow.static {
  return {
    id: String(user.id),
    username: user.username,
    realname: user.username,
    email: user.email ?? '',
    credit: user.fields.credit ?? formatMoney(0),
    isVerified: flag(user.isVerified),
    authStatus: String(user.authStatus),
    creationIP: user.creationIP,
    creationDate: displayTimestamp(user.creationDate, timeZone),
    linkedAccounts: user.linkedAccounts,
    ...NO_GAME_FIELDS,
  };
}

export function userRoleRow(a: RoleAssignment, timeZone: string): typeof UserRoleRow.static {
  return {
    id: String(a.id),
    chatRoleID: a.chatRoleID,
    name: a.name,
    slug: a.slug,
    priority: String(a.priority),
    expiryDate: displayTimestamp(a.expiryDate, timeZone),
  };
}

export function roleRow(r: Role): typeof RoleRow.static {
  return {
    id: String(r.id),
    name: r.name,
    slug: r.slug,
    usernameCSS: r.usernameCSS,
    badgeCSS: r.badgeCSS,
    priority: String(r.priority),
    chatRoleID: r.chatRoleID,
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

const css = () => Type.Union([Type.String({ maxLength: 16000 }), Type.Null()]);
const RoleFieldSchemas = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  slug: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'lower-case; made from the name when omitted' }),
  priority: Type.Integer({ minimum: -2147483648, maximum: 2147483647 }),
  chatRoleID: Type.String({ maxLength: 32 }),
  usernameCSS: css(),
  badgeCSS: css(),
};
export const RoleCreateBody = Type.Object({
  ...Type.Partial(Type.Object(RoleFieldSchemas)).properties,
  name: RoleFieldSchemas.name,
});
export const RolePatchBody = Type.Partial(Type.Object(RoleFieldSchemas));

export function patchOf(body: Partial<RoleFields>): Partial<RoleFields> {
  const patch = { ...body };
  // Forms cannot send null: an empty CSS field clears it.
  for (const key of ['usernameCSS', 'badgeCSS'] as const) if (patch[key] === '') patch[key] = null;
  return patch;
}

/** A new role's fields from a create body: the slug made from the name when omitted. */
export function newRole(body: Static<typeof RoleCreateBody>): RoleFields {
  const patch = patchOf(body);
  return {
    name: body.name,
    slug: patch.slug ?? slugOf(body.name),
    priority: patch.priority ?? 0,
    chatRoleID: patch.chatRoleID ?? '',
    usernameCSS: patch.usernameCSS ?? null,
    badgeCSS: patch.badgeCSS ?? null,
  };
}

function slugOf(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  if (!slug) throw new DomainError('VALIDATION_ERROR', 'slug is required: the name holds no letters or digits to make one from');
  return slug;
}
