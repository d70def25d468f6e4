import type { AuditLog } from '../../core/audit.ts';
import { countParam, isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, hasControlCharacter, now } from '../../core/format.ts';
import { count, empty, fields, raw, sql, type Sql } from '../../core/sql.ts';
import { joined } from '../../core/table.ts';
import {
  lookupKey,
  type Grantor,
  type NewAccount,
  type PlayerPanel,
  type Profile,
  type ProfileField,
  type Role,
  type RoleAssignment,
  type UserAccount,
  type UsersService,
} from './contract.ts';
import { UsersAccount, UsersLinkedAccount, UsersRole, UsersRoleAssignment } from './entities.ts';
import {
  type RoleFields,
  type Account,
  A,
  L,
  R,
  RA,
  a,
  r,
  ra,
  ACCOUNT_PARTS,
  ACCOUNT,
  ACCOUNT_FROM,
  ROLE,
  toUserAccount,
  joinedAccount,
  toRole,
  roleRecord,
  live,
  expired,
  NO_ADMIN,
  byIdOrUsername,
} from './records.ts';

export class DbUsersService implements UsersService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #profileFields: ProfileField[] = [];
  /** ACCOUNT's select list and the profile fields' after it, by field; made again when a feature adds a field. */
  #profile = joined<Record<string, Sql | typeof a>>({ ...ACCOUNT_PARTS });
  /** Other features' panels, which the console's player page shows (console.ts). */
  readonly playerPanels: PlayerPanel[] = [];
  /** Privileged roles' slugs, with why (markPrivileged). */
  readonly #privileged = new Map<string, string>();

  readonly #audit: AuditLog;

  constructor(db: Database, events: EventBus, audit: AuditLog) {
    this.#db = db;
    this.#events = events;
    this.#audit = audit;
  }

  /** An audit entry about a user's role, named for people (the user and the role as they are now). */
  #recordRole(action: 'grant' | 'revoke', userId: number, roleId: number, expiryDate?: string): Promise<void> {
    return this.#audit.record(async () => {
      const [user, role] = await Promise.all([this.findById(userId), this.getRole(roleId)]);
      const name = role?.name ?? `role ${roleId}`;
      const until = expiryDate === undefined ? '' : expiryDate === PERMANENT ? ' (permanent)' : ` until ${expiryDate}`;
      return {
        action: `users.role.${action}`,
        target: { type: 'user', id: userId },
        summary: action === 'grant' ? `Granted ${name} to ${user?.username ?? userId}${until}` : `Took ${name} from ${user?.username ?? userId}`,
        ...(action === 'grant' ? { after: { roleId, expiryDate } } : { before: { roleId } }),
      };
    });
  }

  /** One query: the account and its linked accounts (a left join, one row per link), read with `select`. */
  #joined(where: Sql, select: Sql = ACCOUNT.columns): Promise<unknown[][]> {
    return this.#db.queryArrays(sql`select ${select} ${ACCOUNT_FROM} where ${where}`);
  }

  async #one(where: Sql): Promise<UserAccount | undefined> {
    const rows = await this.#joined(where);
    return rows.length ? joinedAccount(rows) : undefined;
  }

  addPlayerPanel(panel: PlayerPanel): void {
    this.playerPanels.push(panel);
  }

  addProfileField(field: ProfileField): void {
    this.#profileFields.push(field);
    if (field.field in ACCOUNT_PARTS) throw new Error(`A profile field may not be named ${field.field}.`);
    this.#profile = joined({ ...ACCOUNT_PARTS, ...Object.fromEntries(this.#profileFields.map((f) => [f.field, f.select(a.c.id)])) });
  }

  async findProfile(by: { id: number } | { username: string }): Promise<Profile | undefined> {
    if ('id' in by && (!Number.isSafeInteger(by.id) || by.id <= 0)) return undefined;
    const rows = await this.#joined('id' in by ? sql`${a.c.id} = ${by.id}` : sql`${a.c.usernameKey} = ${lookupKey(by.username)}`, this.#profile.columns);
    const row = rows[0];
    if (!row) return undefined;
    const values = this.#profile.read(row);
    const fields: Record<string, string> = {};
    for (const f of this.#profileFields) fields[f.field] = f.show(values[f.field]);
    return { ...joinedAccount(rows, values.account as Account), fields };
  }

  findById(id: number): Promise<UserAccount | undefined> {
    if (!Number.isSafeInteger(id) || id <= 0) return Promise.resolve(undefined);
    return this.#one(sql`${a.c.id} = ${id}`);
  }

  async usernames(ids: number[]): Promise<Map<number, string>> {
    const wanted = [...new Set(ids.filter((id) => Number.isSafeInteger(id) && id > 0))];
    if (wanted.length === 0) return new Map();
    const { columns, fromArray } = UsersAccount.pick('id', 'username');
    const rows = await this.#db.queryArrays(sql`select ${columns} from ${UsersAccount} where ${UsersAccount.c.id} in ${wanted}`);
    return new Map(
      rows.map((row) => {
        const { id, username } = fromArray(row);
        return [id, username];
      }),
    );
  }

  findByUsername(username: string): Promise<UserAccount | undefined> {
    return this.#one(sql`${a.c.usernameKey} = ${lookupKey(username)}`);
  }

  async idsByUsername(usernames: string[]): Promise<(number | undefined)[]> {
    const keys = usernames.map(lookupKey);
    if (keys.length === 0) return [];
    const rows = await this.#db.queryArrays(sql`select ${A.usernameKey}, ${A.id} from ${UsersAccount} where ${A.usernameKey} in ${keys}`);
    // String(): MySQL/MariaDB hand the VARBINARY key back as a Buffer.
    const ids = new Map(rows.map(([key, id]) => [String(key), Number(id)]));
    return keys.map((key) => ids.get(key));
  }

  findByLinkedAccount(platform: string, externalId: string): Promise<UserAccount | undefined> {
    return this.#one(sql`${a.c.id} = (select ${L.userId} from ${UsersLinkedAccount} where ${L.platform} = ${platform} and ${L.externalId} = ${externalId})`);
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
      if ((await this.#db.query(sql`select ${A.id} from ${UsersAccount} where ${A.usernameKey} = ${usernameKey}`)).length) {
        throw new DomainError('USERNAME_ALREADY_EXIST', `The username "${account.username}" is taken.`);
      }
      if (emailKey && (await this.#db.query(sql`select ${A.id} from ${UsersAccount} where ${A.emailKey} = ${emailKey}`)).length) {
        throw new DomainError('EMAIL_ALREADY_EXIST', 'That email address is registered already.');
      }
      let insertId: number;
      try {
        insertId = await UsersAccount.insert(this.#db, {
          username: account.username,
          usernameKey,
          email: account.email ?? null,
          emailKey,
          isVerified: account.isVerified ?? true,
          authStatus: 0,
          creationIp: account.creationIP,
          creationDate: now(),
        });
      } catch (err) {
        // Two registrations racing for one name: the unique index decides, the loser gets the API's error.
        if (isUniqueViolation(err)) {
          throw new DomainError(
            /email/i.test(String((err as Error).message)) ? 'EMAIL_ALREADY_EXIST' : 'USERNAME_ALREADY_EXIST',
            'The username or email is taken.',
          );
        }
        throw err;
      }
      await this.#events.emit('users.created', { userId: insertId, username: account.username });
      return (await this.findById(insertId))!;
    });
  }

  async countCreatedFrom(ip: string): Promise<number> {
    const [row] = await this.#db.query(sql`select ${fields({ n: count() })} from ${UsersAccount} where ${A.creationIp} = ${ip}`);
    return Number(row?.n ?? 0);
  }

  async setAuthStatus(userId: number, authStatus: number): Promise<void> {
    await UsersAccount.update(this.#db, userId, { authStatus });
  }

  async setVerified(userId: number, verified: boolean): Promise<void> {
    await this.#db.transaction(async () => {
      await UsersAccount.update(this.#db, userId, { isVerified: verified });
      await this.#userEntry('verify', userId, `Marked user ${userId} ${verified ? 'verified' : 'not verified'}`, { isVerified: verified });
    });
  }

  /** An audit entry about a user's account (verified, linked accounts), in the change's transaction. */
  #userEntry(verb: string, userId: number, summary: string, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `users.user.${verb}`, target: { type: 'user', id: userId }, summary, after });
  }

  async linkAccount(userId: number, platform: string, externalId: string): Promise<void> {
    // A linked ID is rendered into game commands ({chatUserID}): a line break there would run as a command of its own.
    if (hasControlCharacter(externalId)) throw new DomainError('VALIDATION_ERROR', 'externalID: a line break or another control character is not allowed.');
    await this.#db.transaction(async () => {
      await this.#db.run(sql`delete from ${UsersLinkedAccount}
        where (${L.userId} = ${userId} and ${L.platform} = ${platform}) or (${L.platform} = ${platform} and ${L.externalId} = ${externalId})`);
      await UsersLinkedAccount.insert(this.#db, { userId, platform, externalId });
      await this.#userEntry('link', userId, `Linked ${platform} account ${externalId} to user ${userId}`, { platform, externalId });
    });
  }

  async unlinkAccount(userId: number, platform: string): Promise<boolean> {
    return this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(sql`delete from ${UsersLinkedAccount} where ${L.userId} = ${userId} and ${L.platform} = ${platform}`);
      if (affectedRows > 0) await this.#userEntry('unlink', userId, `Removed the ${platform} account of user ${userId}`);
      return affectedRows > 0;
    });
  }

  async searchAccounts(text: string, page: { after?: string; limit: number }): Promise<UserAccount[]> {
    const key = lookupKey(text.trim());
    const after = page.after === undefined ? '' : lookupKey(page.after);
    const byName = (where: Sql, hint: Sql = empty) =>
      UsersAccount.select(this.#db, sql`${hint}where ${where} order by ${A.usernameKey} limit ${countParam(page.limit)}`);
    // MySQL would walk the names in order hoping to meet the few matching emails early, reading
    // every name after `after` when they are few: it is told to take the emails' index and sort.
    const emailsFirst = this.#db.dialect === 'mysql' ? raw('ignore index for order by (users_accounts_username_key_unique) ') : empty;
    // The highest code point: every key starting with `key` sorts between key and key + TOP, byte for byte.
    const TOP = '\u{10FFFF}';
    // The names read start at one bound, the later of the search's start and the page's key:
    // given both, SQLite ranged from the page's key (the first page: from the first name).
    const start = Buffer.compare(Buffer.from(after), Buffer.from(key)) >= 0 ? sql`${A.usernameKey} > ${after}` : sql`${A.usernameKey} >= ${key}`;
    // Three reads, each bounded by its own index, merged: one statement OR-ing them walks the
    // names from `after` to the end of the table, testing each row, until a page is full.
    const found = !key
      ? [await byName(sql`${A.usernameKey} > ${after}`)]
      : await Promise.all([
          byName(sql`${start} and ${A.usernameKey} < ${key + TOP}`),
          byName(sql`${A.emailKey} >= ${key} and ${A.emailKey} < ${key + TOP} and ${A.usernameKey} > ${after}`, emailsFirst),
          byName(sql`${A.id} in (select ${L.userId} from ${UsersLinkedAccount} where ${L.platform} = 'chat' and ${L.externalId} = ${text.trim()})
        and ${A.usernameKey} > ${after}`),
        ]);
    const unique = new Map(found.flat().map((a) => [a.id, a]));
    // Byte order, as the keys sort in the database.
    const accounts = [...unique.values()].sort((a, b) => Buffer.compare(Buffer.from(a.usernameKey), Buffer.from(b.usernameKey))).slice(0, page.limit);
    const links = new Map(accounts.map((a) => [a.id, {} as Record<string, string>]));
    if (accounts.length) {
      const rows = await UsersLinkedAccount.select(this.#db, sql`where ${L.userId} in ${accounts.map((a) => a.id)}`);
      for (const { userId, platform, externalId } of rows) links.get(userId)![platform] = externalId;
    }
    return accounts.map((a) => toUserAccount(a, links.get(a.id)!));
  }

  async findRoleBySlug(slug: string): Promise<Role | undefined> {
    const [role] = await UsersRole.select(this.#db, sql`where ${R.slug} = ${slug}`);
    return role && toRole(role);
  }

  async listRoles(): Promise<Role[]> {
    return (await UsersRole.select(this.#db, sql`order by ${R.priority} desc, ${R.id}`)).map(toRole);
  }

  async getRole(roleId: number): Promise<Role | undefined> {
    const role = await UsersRole.find(this.#db, roleId);
    return role && toRole(role);
  }

  async rolesOf(userId: number): Promise<RoleAssignment[]> {
    const rows = await this.#db.queryArrays(
      sql`select ${ROLE.columns} from ${ra} join ${r} on ${r.c.id} = ${ra.c.roleId}
       where ${ra.c.userId} = ${userId} and ${live(ra.c.expiryDate)} order by ${r.c.priority} desc, ${r.c.id}`,
    );
    return rows.map((row) => {
      const { role, expiryDate } = ROLE.read(row);
      return { ...toRole(role), expiryDate: String(expiryDate) };
    });
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
      sql`select ${fields({ expiry_date: RA.expiryDate })} from ${UsersRoleAssignment}
        where ${RA.userId} = ${userId} and ${RA.roleId} = ${roleId} and ${live(RA.expiryDate)}${raw(this.#db.forUpdate)}`,
    );
    return held && String(held.expiry_date);
  }

  async #setExpiry(userId: number, roleId: number, expiryDate: string): Promise<void> {
    const { affectedRows } = await this.#db.run(
      sql`update ${UsersRoleAssignment} set ${RA.expiryDate} = ${expiryDate} where ${RA.userId} = ${userId} and ${RA.roleId} = ${roleId}`,
    );
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

  /** FORBIDDEN when the role is privileged and `by` is no admin: taking it away could lock staff out. */
  async #takeable(roleId: number, by: Grantor): Promise<void> {
    const role = await this.getRole(roleId);
    const reason = role && this.privilegeOf(role);
    if (reason !== undefined && !by.admin) {
      throw new DomainError('FORBIDDEN', `Role ${role!.id} (${role!.name}) ${reason}: only an admin may take it away (an API key with the admin scope).`);
    }
  }

  async grantRole(userId: number, roleId: number, expiryDate: string = PERMANENT, by: Grantor = NO_ADMIN): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      await this.#grantable(roleId, by);
      await this.#setExpiry(userId, roleId, expiryDate);
      await this.#recordRole('grant', userId, roleId, expiryDate);
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
  async revokeRole(userId: number, roleId: number, by?: Grantor): Promise<boolean> {
    return this.#db.transaction(async () => {
      if (by) await this.#takeable(roleId, by);
      const { affectedRows } = await this.#db.run(
        sql`delete from ${UsersRoleAssignment} where ${RA.userId} = ${userId} and ${RA.roleId} = ${roleId} and ${live(RA.expiryDate)}`,
      );
      if (affectedRows > 0) {
        await this.#events.emit('users.role.revoked', { userId, roleId, reason: 'revoked' });
        await this.#recordRole('revoke', userId, roleId);
      }
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
      if (toRoleId !== fromRoleId) await this.revokeRole(userId, fromRoleId, by);
      await this.#setExpiry(userId, toRoleId, expiryDate ?? held);
      await this.#recordRole('grant', userId, toRoleId, expiryDate ?? held);
      return this.rolesOf(userId);
    });
  }

  /** Creates a role (admin API); a taken slug is a CONFLICT. */
  async createRole(fields: RoleFields): Promise<Role> {
    return this.#db.transaction(async () => {
      await this.#requireFreeSlug(fields.slug);
      const role = (await this.getRole(await UsersRole.insert(this.#db, roleRecord(fields))))!;
      await this.#audit.record({ action: 'users.role.create', target: { type: 'role', id: role.id }, summary: `Created role ${role.name}`, after: role });
      return role;
    });
  }

  /** Changes the given fields of a role (admin API). Throws ROLE_NOT_FOUND, or CONFLICT for a taken slug. */
  async updateRole(roleId: number, patch: Partial<RoleFields>): Promise<Role> {
    return this.#db.transaction(async () => {
      const role = await this.requireRole(roleId);
      if (patch.slug !== undefined && patch.slug !== role.slug) await this.#requireFreeSlug(patch.slug);
      await UsersRole.update(this.#db, roleId, roleRecord(patch));
      const after = (await this.getRole(roleId))!;
      await this.#audit.record({
        action: 'users.role.update',
        target: { type: 'role', id: roleId },
        summary: `Changed role ${after.name}`,
        before: role,
        after,
      });
      return after;
    });
  }

  /** Deletes a role and every assignment of it; holders are told (chat role sync). False if there was no such role. */
  async deleteRole(roleId: number): Promise<boolean> {
    if (!Number.isSafeInteger(roleId) || roleId <= 0) return false;
    return this.#db.transaction(async () => {
      const holders = await this.#db.query(
        sql`select ${fields({ user_id: RA.userId })}
          from ${UsersRoleAssignment} where ${RA.roleId} = ${roleId} and ${live(RA.expiryDate)}${raw(this.#db.forUpdate)}`,
      );
      const before = await this.getRole(roleId);
      await this.#db.run(sql`delete from ${UsersRoleAssignment} where ${RA.roleId} = ${roleId}`);
      const { affectedRows } = await this.#db.run(sql`delete from ${UsersRole} where ${R.id} = ${roleId}`);
      if (affectedRows === 0) return false;
      await this.#audit.record({
        action: 'users.role.delete',
        target: { type: 'role', id: roleId },
        summary: `Deleted role ${before?.name ?? roleId}`,
        before,
      });
      for (const h of holders) await this.#events.emit('users.role.revoked', { userId: Number(h.user_id), roleId, reason: 'revoked' });
      return true;
    });
  }

  async #requireFreeSlug(slug: string): Promise<void> {
    const taken = await this.#db.query(sql`select ${R.id} from ${UsersRole} where ${R.slug} = ${slug}${raw(this.#db.forUpdate)}`);
    if (taken.length) throw new DomainError('CONFLICT', `A role with the slug "${slug}" exists already.`);
  }

  /** Deletes expired assignments and tells listeners (chat role sync); returns how many went. */
  async sweepExpired(): Promise<number> {
    const due = await UsersRoleAssignment.select(this.#db, sql`where ${expired()}`);
    let removed = 0;
    for (const { id, userId, roleId } of due) {
      await this.#db.transaction(async () => {
        // Re-checked: a grant since the select (even a permanent one) must survive.
        const { affectedRows } = await this.#db.run(sql`delete from ${UsersRoleAssignment} where ${RA.id} = ${id} and ${expired()}`);
        if (affectedRows > 0) {
          removed++;
          await this.#events.emit('users.role.revoked', { userId, roleId, reason: 'expired' });
        }
      });
    }
    return removed;
  }
}
