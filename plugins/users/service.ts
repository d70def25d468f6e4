import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { PERMANENT, addSeconds, now } from '../../core/format.ts';
import type { NewAccount, Role, RoleAssignment, UserAccount, UsersService } from './contract.ts';

interface AccountRow {
  id: number; username: string; email: string | null; is_verified: number | boolean; auth_status: number;
  creation_ip: string; creation_date: string;
}
interface RoleRow {
  id: number; name: string; slug: string; priority: number; chat_role_id: string; username_css: string | null; badge_css: string | null;
}

const ACCOUNT_COLUMNS = 'a.id, a.username, a.email, a.is_verified, a.auth_status, a.creation_ip, a.creation_date';
const ROLE_COLUMNS = 'r.id, r.name, r.slug, r.priority, r.chat_role_id, r.username_css, r.badge_css';

function toRole(r: RoleRow): Role {
  return {
    id: Number(r.id), name: r.name, slug: r.slug, priority: Number(r.priority), chatRoleID: r.chat_role_id,
    usernameCSS: r.username_css, badgeCSS: r.badge_css,
  };
}

/** "Not expired": the sentinel sorts below every real timestamp, so it needs its own test. */
const LIVE = `(ra.expiry_date = '${PERMANENT}' or ra.expiry_date > ?)`;

export class DbUsersService implements UsersService {
  readonly #db: Database;
  readonly #events: EventBus;

  constructor(db: Database, events: EventBus) {
    this.#db = db;
    this.#events = events;
  }

  async #one(where: string, params: unknown[]): Promise<UserAccount | undefined> {
    const [row] = await this.#db.query<AccountRow>(`select ${ACCOUNT_COLUMNS} from users_accounts a where ${where}`, params);
    if (!row) return undefined;
    const links = await this.#db.query<{ platform: string; external_id: string }>(
      'select platform, external_id from users_linked_accounts where user_id = ? order by platform', [row.id]);
    return {
      id: Number(row.id), username: row.username, email: row.email, isVerified: Boolean(Number(row.is_verified)),
      authStatus: Number(row.auth_status), creationIP: row.creation_ip, creationDate: row.creation_date,
      linkedAccounts: Object.fromEntries(links.map((l) => [l.platform, l.external_id])),
    };
  }

  findById(id: number): Promise<UserAccount | undefined> {
    if (!Number.isSafeInteger(id) || id <= 0) return Promise.resolve(undefined);
    return this.#one('a.id = ?', [id]);
  }

  findByUsername(username: string): Promise<UserAccount | undefined> {
    return this.#one('a.username_key = ?', [username.toLowerCase()]);
  }

  findByLinkedAccount(platform: string, externalId: string): Promise<UserAccount | undefined> {
    return this.#one('a.id = (select user_id from users_linked_accounts where platform = ? and external_id = ?)', [platform, externalId]);
  }

  async requireById(id: number): Promise<UserAccount> {
    const user = await this.findById(id);
    if (!user) throw new DomainError('USER_NOT_FOUND', `No user with ID ${id}.`);
    return user;
  }

  async requireByUsername(username: string, notFoundCode = 'USER_NOT_FOUND'): Promise<UserAccount> {
    const user = await this.findByUsername(username);
    if (!user) throw new DomainError(notFoundCode, `No user named "${username}".`);
    return user;
  }

  async createAccount(account: NewAccount): Promise<UserAccount> {
    return this.#db.transaction(async () => {
      const usernameKey = account.username.toLowerCase();
      const emailKey = account.email ? account.email.toLowerCase() : null;
      if ((await this.#db.query('select id from users_accounts where username_key = ?' + this.#db.forUpdate, [usernameKey])).length) {
        throw new DomainError('USERNAME_ALREADY_EXIST', `The username "${account.username}" is taken.`);
      }
      if (emailKey && (await this.#db.query('select id from users_accounts where email_key = ?' + this.#db.forUpdate, [emailKey])).length) {
        throw new DomainError('EMAIL_ALREADY_EXIST', 'That email address is registered already.');
      }
      let insertId: number;
      try {
        ({ insertId } = await this.#db.run(
          'insert into users_accounts (username, username_key, email, email_key, is_verified, auth_status, creation_ip, creation_date) values (?, ?, ?, ?, ?, 0, ?, ?)',
          [account.username, usernameKey, account.email ?? null, emailKey, account.isVerified ?? true, account.creationIP, now()]));
      } catch (err) {
        // Two registrations racing for one name: the unique index decides, the loser gets the API's error.
        if (/unique|duplicate/i.test(String((err as Error).message))) {
          throw new DomainError(/email/i.test(String((err as Error).message)) ? 'EMAIL_ALREADY_EXIST' : 'USERNAME_ALREADY_EXIST', 'The username or email is taken.');
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
    await this.#db.run('update users_accounts set auth_status = ? where id = ?', [authStatus, userId]);
  }

  async setVerified(userId: number, verified: boolean): Promise<void> {
    await this.#db.run('update users_accounts set is_verified = ? where id = ?', [verified, userId]);
  }

  async linkAccount(userId: number, platform: string, externalId: string): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#db.run('delete from users_linked_accounts where (user_id = ? and platform = ?) or (platform = ? and external_id = ?)',
        [userId, platform, platform, externalId]);
      await this.#db.run('insert into users_linked_accounts (user_id, platform, external_id) values (?, ?, ?)', [userId, platform, externalId]);
    });
  }

  async unlinkAccount(userId: number, platform: string): Promise<boolean> {
    const { affectedRows } = await this.#db.run('delete from users_linked_accounts where user_id = ? and platform = ?', [userId, platform]);
    return affectedRows > 0;
  }

  async listRoles(): Promise<Role[]> {
    const rows = await this.#db.query<RoleRow>(`select ${ROLE_COLUMNS} from users_roles r order by r.priority desc, r.id`);
    return rows.map(toRole);
  }

  async getRole(roleId: number): Promise<Role | undefined> {
    if (!Number.isSafeInteger(roleId) || roleId <= 0) return undefined;
    const [row] = await this.#db.query<RoleRow>(`select ${ROLE_COLUMNS} from users_roles r where r.id = ?`, [roleId]);
    return row ? toRole(row) : undefined;
  }

  async rolesOf(userId: number): Promise<RoleAssignment[]> {
    const rows = await this.#db.query<RoleRow & { expiry_date: string }>(
      `select ${ROLE_COLUMNS}, ra.expiry_date from users_role_assignments ra join users_roles r on r.id = ra.role_id
       where ra.user_id = ? and ${LIVE} order by r.priority desc, r.id`, [userId, now()]);
    return rows.map((r) => ({ ...toRole(r), expiryDate: r.expiry_date }));
  }

  async #requireRole(roleId: number): Promise<Role> {
    const role = await this.getRole(roleId);
    if (!role) throw new DomainError('ROLE_NOT_FOUND', `No role with ID ${roleId}.`);
    return role;
  }

  async #setExpiry(userId: number, roleId: number, expiryDate: string): Promise<void> {
    const { affectedRows } = await this.#db.run('update users_role_assignments set expiry_date = ? where user_id = ? and role_id = ?', [expiryDate, userId, roleId]);
    if (affectedRows === 0) {
      await this.#db.run('insert into users_role_assignments (user_id, role_id, expiry_date) values (?, ?, ?)', [userId, roleId, expiryDate]);
    }
    await this.#events.emit('users.role.granted', { userId, roleId, expiryDate });
  }

  async grantRole(userId: number, roleId: number, expiryDate: string = PERMANENT): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      await this.#requireRole(roleId);
      await this.#setExpiry(userId, roleId, expiryDate);
      return this.rolesOf(userId);
    });
  }

  async extendRole(userId: number, roleId: number, days: number): Promise<RoleAssignment[]> {
    return this.#db.transaction(async () => {
      await this.requireById(userId);
      await this.#requireRole(roleId);
      const [held] = await this.#db.query<{ expiry_date: string }>(
        `select ra.expiry_date from users_role_assignments ra where ra.user_id = ? and ra.role_id = ? and ${LIVE}${this.#db.forUpdate}`,
        [userId, roleId, now()]);
      let expiry: string;
      if (days === 0 || held?.expiry_date === PERMANENT) expiry = PERMANENT;
      else expiry = addSeconds(held?.expiry_date ?? now(), days * 86400);
      await this.#setExpiry(userId, roleId, expiry);
      return this.rolesOf(userId);
    });
  }

  async revokeRole(userId: number, roleId: number): Promise<boolean> {
    return this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run('delete from users_role_assignments where user_id = ? and role_id = ?', [userId, roleId]);
      if (affectedRows > 0) await this.#events.emit('users.role.revoked', { userId, roleId, reason: 'revoked' });
      return affectedRows > 0;
    });
  }

  /** Deletes expired assignments and tells listeners (chat role sync); returns how many went. */
  async sweepExpired(): Promise<number> {
    const expired = await this.#db.query<{ id: number; user_id: number; role_id: number }>(
      `select id, user_id, role_id from users_role_assignments where expiry_date <> '${PERMANENT}' and expiry_date <= ?`, [now()]);
    let removed = 0;
    for (const row of expired) {
      await this.#db.transaction(async () => {
        const { affectedRows } = await this.#db.run('delete from users_role_assignments where id = ? and expiry_date <= ?', [row.id, now()]);
        if (affectedRows > 0) {
          removed++;
          await this.#events.emit('users.role.revoked', { userId: Number(row.user_id), roleId: Number(row.role_id), reason: 'expired' });
        }
      });
    }
    return removed;
  }
}
