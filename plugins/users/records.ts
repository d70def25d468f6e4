import { PERMANENT, now } from '../../core/format.ts';
import { sql, type Sql } from '../../core/sql.ts';
import { joined, type TableRecord } from '../../core/table.ts';
import type { Grantor, Role, UserAccount } from './contract.ts';
import { UsersAccount, UsersLinkedAccount, UsersRole, UsersRoleAssignment } from './entities.ts';

/** The editable fields of a role (admin API). */
export type RoleFields = Omit<Role, 'id'>;

export type Account = TableRecord<typeof UsersAccount>;
export type RoleRecord = TableRecord<typeof UsersRole>;

export const A = UsersAccount.c;
export const L = UsersLinkedAccount.c;
export const R = UsersRole.c;
export const RA = UsersRoleAssignment.c;
export const a = UsersAccount.as('a');
export const l = UsersLinkedAccount.as('l');
export const r = UsersRole.as('r');
export const ra = UsersRoleAssignment.as('ra');

/**
 * An account with its linked accounts, by a left join: one row per link, or one whose platform is
 * null. Read as arrays: the account, the link's platform and external id, then any profile fields.
 */
export const ACCOUNT_PARTS = { account: a, platform: l.c.platform, externalId: l.c.externalId };
export const ACCOUNT = joined(ACCOUNT_PARTS);
export const ACCOUNT_FROM = sql`from ${a} left join ${l} on ${l.c.userId} = ${a.c.id}`;
export const ROLE = joined({ role: r, expiryDate: ra.c.expiryDate });

/** The contract's account: the record in the contract's casing (creationIP), without the lookup keys. */
export function toUserAccount(a: Account, linkedAccounts: Record<string, string>): UserAccount {
  return {
    id: a.id,
    username: a.username,
    email: a.email,
    isVerified: a.isVerified,
    authStatus: a.authStatus,
    creationIP: a.creationIp,
    creationDate: a.creationDate,
    linkedAccounts,
  };
}

/** An account read with ACCOUNT (or a select list that begins like it): the first row's account, every row's link. */
export function joinedAccount(rows: unknown[][], account = ACCOUNT.one(rows[0]!, 'account')): UserAccount {
  const links: Record<string, string> = {};
  for (const row of rows) {
    const platform = ACCOUNT.one(row, 'platform');
    if (platform != null) links[String(platform)] = String(ACCOUNT.one(row, 'externalId'));
  }
  return toUserAccount(account, links);
}

/** The contract's role: the record in the contract's casing (chatRoleID, usernameCSS, badgeCSS). */
export function toRole(r: RoleRecord): Role {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    priority: r.priority,
    chatRoleID: r.chatRoleId,
    usernameCSS: r.usernameCss,
    badgeCSS: r.badgeCss,
  };
}

/** A role's fields as the table's record; fields left out stay undefined, so updates leave them. */
export function roleRecord(f: Partial<RoleFields>): Partial<Omit<RoleRecord, 'id'>> {
  return { name: f.name, slug: f.slug, priority: f.priority, chatRoleId: f.chatRoleID, usernameCss: f.usernameCSS, badgeCss: f.badgeCSS };
}

/** "Not expired" now: the sentinel sorts below every real timestamp, so it needs its own test. */
export const live = (expiry: Sql) => sql`(${expiry} = ${PERMANENT} or ${expiry} > ${now()})`;
export const expired = () => sql`${RA.expiryDate} <> ${PERMANENT} and ${RA.expiryDate} <= ${now()}`;

/** A grant whose caller does not say it acts for an admin. */
export const NO_ADMIN: Grantor = { admin: false };

/** Digits are tried as an ID, then as a username (a name may be all digits); anything else is a username. */
export async function byIdOrUsername<T>(ref: string, find: (by: { id: number } | { username: string }) => Promise<T | undefined>): Promise<T | undefined> {
  const byId = /^[0-9]{1,15}$/.test(ref) ? await find({ id: Number(ref) }) : undefined;
  return byId ?? find({ username: ref });
}
