import { countParam, isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, now } from '../../core/format.ts';
import type { TableRecord } from '../../core/table.ts';
import { lookupKey, type Grantor, type NewAccount, type PlayerPanel, type Profile, type ProfileField, type Role, type RoleAssignment, type UserAccount,
  type UsersService } from './contract.ts';
import { UsersAccount, UsersLinkedAccount, UsersRole, UsersRoleAssignment } from './entities.ts';

/** The editable fields of a role (admin API). */
export type RoleFields = Omit<Role, 'id'>;

type Account = TableRecord<typeof UsersAccount>;
type RoleRecord = TableRecord<typeof UsersRole>;

/**
 * An account with its linked accounts, by a left join: one row per link, or one whose platform is
 * null. Read as arrays: every account column, then the link's two, then any profile fields.
 */
const ACCOUNT_COLUMNS = `${UsersAccount.qualifiedColumns('a')}, l.platform, l.external_id`;
const ACCOUNT_FROM = 'from users_accounts a left join users_linked_accounts l on l.user_id = a.id';
/** Where the link's platform sits in such a row; its external id follows, then the profile fields. */
const PLATFORM = UsersAccount.width;
const ROLE_COLUMNS = UsersRole.qualifiedColumns('r');

/** The contract's account: the record in the contract's casing (creationIP), without the lookup keys. */
function toUserAccount(a: Account, linkedAccounts: Record<string, string>): UserAccount {
  return {
    id: a.id, username: a.username, email: a.email, isVerified: a.isVerified, authStatus: a.authStatus,
    creationIP: a.creationIp, creationDate: a.creationDate, linkedAccounts,
  };
}

/** An account read with ACCOUNT_COLUMNS: the first row's account, every row's link. */
function joinedAccount(rows: unknown[][]): UserAccount {
  const links: Record<string, string> = {};
  for (const r of rows) if (r[PLATFORM] != null) links[String(r[PLATFORM])] = String(r[PLATFORM + 1]);
  return toUserAccount(UsersAccount.fromArray(rows[0]!), links);
}

/** The contract's role: the record in the contract's casing (chatRoleID, usernameCSS, badgeCSS). */
function toRole(r: RoleRecord): Role {
  return {
    id: r.id, name: r.name, slug: r.slug, priority: r.priority, chatRoleID: r.chatRoleId, usernameCSS: r.usernameCss, badgeCSS: r.badgeCss,
  };
}

/** A role's fields as the table's record; fields left out stay undefined, so updates leave them. */
function roleRecord(f: Partial<RoleFields>): Partial<Omit<RoleRecord, 'id'>> {
  return { name: f.name, slug: f.slug, priority: f.priority, chatRoleId: f.chatRoleID, usernameCss: f.usernameCSS, badgeCss: f.badgeCSS };
}

/** "Not expired" (one `?`: now): the sentinel sorts below every real timestamp, so it needs its own test. */
const live = (column: string) => `(${column} = '${PERMANENT}' or ${column} > ?)`;
const LIVE = live('ra.expiry_date');
const EXPIRED = `expiry_date <> '${PERMANENT}' and expiry_date <= ?`;

/** A grant whose caller does not say it acts for an admin. */
const NO_ADMIN: Grantor = { admin: false };

/** Digits are tried as an ID, then as a username (a name may be all digits); anything else is a username. */
async function byIdOrUsername<T>(ref: string, find: (by: { id: number } | { username: string }) => Promise<T | undefined>): Promise<T | undefined> {
  const byId = /^[0-9]{1,15}$/.test(ref) ? await find({ id: Number(ref) }) : undefined;
  return byId ?? find({ username: ref });
}

export class DbUsersService implements UsersService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #profileFields: ProfileField[] = [];
  /** The profile fields' columns, after ACCOUNT_COLUMNS; made again when a feature adds a field. */
  #profileColumns = '';
  /** Other features' panels, which the console's player page shows (console.ts). */
  readonly playerPanels: PlayerPanel[] = [];
  /** Privileged roles' slugs, with why (markPrivileged). */
  readonly #privileged = new Map<string, string>();

  constructor(db: Database, events: EventBus) {
    this.#db = db;
    this.#events = events;
  }

  /** One query: the account and its linked accounts (a left join, one row per link), `more` columns after them. */
  #joined(where: string, params: unknown[], more = ''): Promise<unknown[][]> {
    return this.#db.queryArrays(`select ${ACCOUNT_COLUMNS}${more} ${ACCOUNT_FROM} where ${where}`, params);
  }

  async #one(where: string, params: unknown[]): Promise<UserAccount | undefined> {
    const rows = await this.#joined(where, params);
    return rows.length ? joinedAccount(rows) : undefined;
  }

  addPlayerPanel(panel: PlayerPanel): void {
    this.playerPanels.push(panel);
  }

  addProfileField(field: ProfileField): void {
    this.#profileFields.push(field);
    this.#profileColumns = this.#profileFields.map((f) => `, ${f.select('a.id')}`).join('');
  }

  async findProfile(by: { id: number } | { username: string }): Promise<Profile | undefined> {
    if ('id' in by && (!Number.isSafeInteger(by.id) || by.id <= 0)) return undefined;
    const rows = await this.#joined('id' in by ? 'a.id = ?' : 'a.username_key = ?', ['id' in by ? by.id : lookupKey(by.username)], this.#profileColumns);
    const row = rows[0];
    if (!row) return undefined;
    const fields = Object.fromEntries(this.#profileFields.map((f, i) => [f.field, f.show(row[PLATFORM + 2 + i])]));
    return { ...joinedAccount(rows), fields };
  }

  findById(id: number): Promise<UserAccount | undefined> {
    if (!Number.isSafeInteger(id) || id <= 0) return Promise.resolve(undefined);
    return this.#one('a.id = ?', [id]);
  }

  findByUsername(username: string): Promise<UserAccount | undefined> {
    return this.#one('a.username_key = ?', [lookupKey(username)]);
  }

  async idsByUsername(usernames: string[]): Promise<(number | undefined)[]> {
    const keys = usernames.map(lookupKey);
    if (keys.length === 0) return [];
    const rows = await this.#db.queryArrays(`select username_key, id from users_accounts where username_key in (${keys.map(() => '?').join(', ')})`, keys);
    // String(): MySQL/MariaDB hand the VARBINARY key back as a Buffer.
    const ids = new Map(rows.map(([key, id]) => [String(key), Number(id)]));
    return keys.map((key) => ids.get(key));
  }

  findByLinkedAccount(platform: string, externalId: string): Promise<UserAccount | undefined> {
    return this.#one('a.id = (select user_id from users_linked_accounts where platform = ? and external_id = ?)', [platform, externalId]);
  }

  async requireById(id: number): Promise<UserAccount> {
    const user = await this.findById(id);
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user with ID ${id}.`);
    return user;
  }

  async requireByUsername(username: string): Promise<UserAccount> {
    const user = await this.findByUsername(username);
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user named "${username}".`);
    return user;
  }

  async requireByIdOrUsername(idOrUsername: string): Promise<UserAccount> {
    const user = await byIdOrUsername(idOrUsername, (by) => ('id' in by ? this.findById(by.id) : this.findByUsername(by.username)));
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user with ID or username "${idOrUsername}".`);
    return user;
  }

  findProfileByIdOrUsername(idOrUsername: string): Promise<Profile | undefined> {
    return byIdOrUsername(idOrUsername, (by) => this.findProfile(by));
  }

  async createAccount(account: NewAccount): Promise<UserAccount> {
    return this.#db.transaction(async () => {
      const usernameKey = lookupKey(account.username);
      const emailKey = account.email ? lookupKey(account.email) : null;
      // Plain reads, not FOR UPDATE: on MySQL a locking read of a name nobody has takes a gap lock,
      // and parallel registrations then deadlock on each other's gaps at the insert (the bench's
      // seeding once got a 500 after the retries ran out). The unique index below decides a race;
      // these reads only give the usual case its precise error.
      if ((await this.#db.query('select id from users_accounts where username_key = ?', [usernameKey])).length) {
        throw new DomainError('USERNAME_ALREADY_EXIST', `The username "${account.username}" is taken.`);
      }
      if (emailKey && (await this.#db.query('select id from users_accounts where email_key = ?', [emailKey])).length) {
        throw new DomainError('EMAIL_ALREADY_EXIST', 'That email address is registered already.');
      }
      let insertId: number;
      try {
        insertId = await UsersAccount.insert(this.#db, {
          username: account.username, usernameKey, email: account.email ?? null, emailKey, isVerified: account.isVerified ?? true,
          authStatus: 0, creationIp: account.creationIP, creationDate: now(),
        });
      } catch (err) {
        // Two registrations racing for one name: the unique index decides, the loser gets the API's error.
        if (isUniqueViolation(err)) {
          throw new DomainError(/email/i.test(String((err as Error).message)) ? 'EMAIL_ALREADY_EXIST' : 'USERNAME_ALREADY_EXIST',
            'The username or email is taken.');
        }
        throw err;
      }
      await this.#events.emit('users.created', { userId: insertId, username: account.username });
      return (await this.findById(insertId))!;
    });
  }

  async countCreatedFrom(ip: string): Promise<number> {
    const [row] = await this.#db.query<{ n: number }>('select count(*) as n from users_accounts where creation_ip = ?', [ip]);
    return Number(row?.n ?? 0);
  }

  async setAuthStatus(userId: number, authStatus: number): Promise<void> {
    await UsersAccount.update(this.#db, userId, { authStatus });
  }

  async setVerified(userId: number, verified: boolean): Promise<void> {
    await UsersAccount.update(this.#db, userId, { isVerified: verified });
  }

  async linkAccount(userId: number, platform: string, externalId: string): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#db.run('delete from users_linked_accounts where (user_id = ? and platform = ?) or (platform = ? and external_id = ?)',
        [userId, platform, platform, externalId]);
      await UsersLinkedAccount.insert(this.#db, { userId, platform, externalId });
    });
  }

  async unlinkAccount(userId: number, platform: string): Promise<boolean> {
    const { affectedRows } = await this.#db.run('delete from users_linked_accounts where user_id = ? and platform = ?', [userId, platform]);
    return affectedRows > 0;
  }

  async searchAccounts(text: string, page: { after?: string; limit: number }): Promise<UserAccount[]> {
    const key = lookupKey(text.trim());
    // The highest code point: every key starting with `key` sorts between key and key + TOP, byte for byte.
    const TOP = '\u{10FFFF}';
    const params: unknown[] = [page.after === undefined ? '' : lookupKey(page.after)];
    let match = '';
    if (key) {
      match = ` and ((a.username_key >= ? and a.username_key < ?) or (a.email_key >= ? and a.email_key < ?)
        or a.id in (select user_id from users_linked_accounts where platform = 'chat' and external_id = ?))`;
      params.push(key, key + TOP, key, key + TOP, text.trim());
    }
    params.push(countParam(page.limit));
    const accounts = await UsersAccount.select(this.#db, `a where a.username_key > ?${match} order by a.username_key limit ?`, params);
    const links = new Map(accounts.map((a) => [a.id, {} as Record<string, string>]));
    if (accounts.length) {
      const rows = await UsersLinkedAccount.select(this.#db, `where user_id in (${accounts.map(() => '?').join(', ')})`, accounts.map((a) => a.id));
      for (const { userId, platform, externalId } of rows) links.get(userId)![platform] = externalId;
    }
    return accounts.map((a) => toUserAccount(a, links.get(a.id)!));
  }

  async findRoleBySlug(slug: string): Promise<Role | undefined> {
    const [role] = await UsersRole.select(this.#db, 'where slug = ?', [slug]);
    return role && toRole(role);
  }

  async listRoles(): Promise<Role[]> {
    return (await UsersRole.select(this.#db, 'order by priority desc, id')).map(toRole);
  }

  async getRole(roleId: number): Promise<Role | undefined> {
    const role = await UsersRole.find(this.#db, roleId);
    return role && toRole(role);
  }

  async rolesOf(userId: number): Promise<RoleAssignment[]> {
    const rows = await this.#db.query(
      `select ${ROLE_COLUMNS}, ra.expiry_date from users_role_assignments ra join users_roles r on r.id = ra.role_id
       where ra.user_id = ? and ${LIVE} order by r.priority desc, r.id`, [userId, now()]);
    return rows.map((r) => ({ ...toRole(UsersRole.fromRow(r)), expiryDate: String(r.expiry_date) }));
  }

  /** The role, or ROLE_NOT_FOUND. */
  async requireRole(roleId: number): Promise<Role> {
    const role = await this.getRole(roleId);
    if (!role) throw new DomainError('ROLE_NOT_FOUND', `No role with ID ${roleId}.`);
    return role;
  }

  /** The expiry of the user's live assignment of a role, locked for the rest of the transaction. */
  async #held(userId: number, roleId: number): Promise<string | undefined> {
    const [held] = await this.#db.query(
      `select ra.expiry_date from users_role_assignments ra where ra.user_id = ? and ra.role_id = ? and ${LIVE}${this.#db.forUpdate}`,
      [userId, roleId, now()]);
    return held && String(held.expiry_date);
  }

  async #setExpiry(userId: number, roleId: number, expiryDate: string): Promise<void> {
    const { affectedRows } = await this.#db.run('update users_role_assignments set expiry_date = ? where user_id = ? and role_id = ?',
      [expiryDate, userId, roleId]);
    if (affectedRows === 0) {
      await UsersRoleAssignment.insert(this.#db, { userId, roleId, expiryDate });
    }
    await this.#events.emit('users.role.granted', { userId, roleId, expiryDate });
  }

  markPrivileged(slug: string, reason: string): void {
    if (!this.#privileged.has(slug)) this.#privileged.set(slug, reason);
  }

  privilegeOf(role: Pick<Role, 'slug'>): string | undefined {
    return this.#privileged.get(role.slug);
  }

  /**
   * The role to grant, or ROLE_NOT_FOUND; FORBIDDEN when it is privileged and `by` is no admin.
   * Without `by` it is a purchase (extendRole), which no admin can make for a privileged role.
   */
  async #grantable(roleId: number, by?: Grantor): Promise<Role> {
    const role = await this.requireRole(roleId);
    const reason = this.privilegeOf(role);
    if (reason !== undefined && !by?.admin) {
      const who = by ? 'only an admin may grant it (an API key with the admin scope, or an admin in the console)' : 'it is never sold';
      throw new DomainError('FORBIDDEN', `Role ${role.id} (${role.name}) ${reason}: ${who}.`);
    }
    return role;
  }

  async grantRole(userId: number, roleId: number, expiryDate: string = PERMANENT, by: Grantor = NO_ADMIN): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      await this.#grantable(roleId, by);
      await this.#setExpiry(userId, roleId, expiryDate);
      return this.rolesOf(userId);
    });
  }

  async extendRole(userId: number, roleId: number, days: number): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      await this.#grantable(roleId);
      const held = await this.#held(userId, roleId);
      let expiry: string;
      if (days === 0 || held === PERMANENT) expiry = PERMANENT;
      else expiry = addSeconds(held ?? now(), days * 86400);
      await this.#setExpiry(userId, roleId, expiry);
      return this.rolesOf(userId);
    });
  }

  /**
   * Removes a held role; false if the user did not hold it. An expired assignment is not held:
   * it stays for the sweep, which reports it as expired rather than revoked.
   */
  async revokeRole(userId: number, roleId: number): Promise<boolean> {
    return this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(
        `delete from users_role_assignments where user_id = ? and role_id = ? and ${live('expiry_date')}`, [userId, roleId, now()]);
      if (affectedRows > 0) await this.#events.emit('users.role.revoked', { userId, roleId, reason: 'revoked' });
      return affectedRows > 0;
    });
  }

  /**
   * Changes a held assignment (PATCH /api/users/<id>/roles/<role>): moves it to `toRoleId` and/or
   * sets its expiry; without `expiryDate` the current expiry is kept. Throws USER_NOT_FOUND, or
   * ROLE_NOT_FOUND when the user does not hold `fromRoleId` or `toRoleId` does not exist, or
   * FORBIDDEN when `toRoleId` is privileged and `by` is no admin (even to change its expiry).
   */
  async moveRole(userId: number, fromRoleId: number, toRoleId: number, expiryDate?: string, by: Grantor = NO_ADMIN): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      const held = await this.#held(userId, fromRoleId);
      if (!held) throw new DomainError('ROLE_NOT_FOUND', `User ${userId} does not hold role ${fromRoleId}.`);
      await this.#grantable(toRoleId, by);
      if (toRoleId !== fromRoleId) await this.revokeRole(userId, fromRoleId);
      await this.#setExpiry(userId, toRoleId, expiryDate ?? held);
      return this.rolesOf(userId);
    });
  }

  /** Creates a role (admin API); a taken slug is a CONFLICT. */
  async createRole(fields: RoleFields): Promise<Role> {
    return this.#db.transaction(async () => {
      await this.#requireFreeSlug(fields.slug);
      return (await this.getRole(await UsersRole.insert(this.#db, roleRecord(fields))))!;
    });
  }

  /** Changes the given fields of a role (admin API). Throws ROLE_NOT_FOUND, or CONFLICT for a taken slug. */
  async updateRole(roleId: number, patch: Partial<RoleFields>): Promise<Role> {
    return this.#db.transaction(async () => {
      const role = await this.requireRole(roleId);
      if (patch.slug !== undefined && patch.slug !== role.slug) await this.#requireFreeSlug(patch.slug);
      await UsersRole.update(this.#db, roleId, roleRecord(patch));
      return (await this.getRole(roleId))!;
    });
  }

  /** Deletes a role and every assignment of it; holders are told (chat role sync). False if there was no such role. */
  async deleteRole(roleId: number): Promise<boolean> {
    if (!Number.isSafeInteger(roleId) || roleId <= 0) return false;
    return this.#db.transaction(async () => {
      const holders = await this.#db.query<{ user_id: number }>(
        `select ra.user_id from users_role_assignments ra where ra.role_id = ? and ${LIVE}${this.#db.forUpdate}`, [roleId, now()]);
      await this.#db.run('delete from users_role_assignments where role_id = ?', [roleId]);
      const { affectedRows } = await this.#db.run('delete from users_roles where id = ?', [roleId]);
      if (affectedRows === 0) return false;
      for (const h of holders) await this.#events.emit('users.role.revoked', { userId: Number(h.user_id), roleId, reason: 'revoked' });
      return true;
    });
  }

  async #requireFreeSlug(slug: string): Promise<void> {
    const taken = await this.#db.query(`select id from users_roles where slug = ?${this.#db.forUpdate}`, [slug]);
    if (taken.length) throw new DomainError('CONFLICT', `A role with the slug "${slug}" exists already.`);
  }

  /** Deletes expired assignments and tells listeners (chat role sync); returns how many went. */
  async sweepExpired(): Promise<number> {
    const expired = await UsersRoleAssignment.select(this.#db, `where ${EXPIRED}`, [now()]);
    let removed = 0;
    for (const { id, userId, roleId } of expired) {
      await this.#db.transaction(async () => {
        // Re-checked: a grant since the select (even a permanent one) must survive.
        const { affectedRows } = await this.#db.run(`delete from users_role_assignments where id = ? and ${EXPIRED}`, [id, now()]);
        if (affectedRows > 0) {
          removed++;
          await this.#events.emit('users.role.revoked', { userId, roleId, reason: 'expired' });
        }
      });
    }
    return removed;
  }
}
