import type { AuditLog } from '../../core/audit.ts';
/**
 * Login, registration, sessions and two-factor (decisions.md §3). Accounts belong to the users
 * feature; this one keeps the credentials, the TOTP secrets and the sessions.
 */
import { randomBytes } from 'node:crypto';
import { NobleCryptoPlugin, ScureBase32Plugin, TOTP, generateSecret, generateURI } from 'otplib';
import { clockNow } from '../../core/clock.ts';
import { countParam, type Database } from '../../core/db.ts';
import { ConfigError } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { fields, sql } from '../../core/sql.ts';
import type { UsersService } from '../users/contract.ts';
import type { AuthService, ClientInfo, CredentialCheck, NewAccount, SignIn } from './contract.ts';
import { AuthCredential, AuthRegisterLock, AuthSession, AuthTotp } from './entities.ts';
import { Lockout, type LockoutOptions } from './lockout.ts';
import { checkPassword, hashPassword, sha256Hex } from './passwords.ts';
import { isSealed, type SecretBox } from './secrets.ts';

export interface AuthOptions {
  sessionDays: number;
  passwordMinLength: number;
  passwordMaxLength: number;
  tfaIssuer: string;
  tfaMaxAttempts: number;
  lockout: { password: LockoutOptions; code: LockoutOptions };
}

/** A login awaiting its two-factor code lives this long (decisions.md §3). */
const TFA_PENDING_SECONDS = 300;

const S = AuthSession.c;
const O = AuthTotp.c;

/** The game auth plugin's `SessionState`s that this server decides (AUTHENTICATED is the plugin's own). */
export type GameSessionState = 'LOGIN_REQUIRED' | 'REGISTER_REQUIRED' | 'HAS_SESSION' | 'TFA_REQUIRED' | 'EMAIL_NOT_VERIFIED' | 'USERNAME_CASE_MISMATCH';

export interface GameSession {
  state: GameSessionState;
  token?: string;
  /** The account's name as registered. */
  realname?: string;
}

const USERNAME = /^[A-Za-z0-9_]{3,16}$/;
/** Deliberately plain: something@something.tld, no spaces, within the column's 191 characters. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function tokenHash(token: string): string {
  return sha256Hex(token.toLowerCase());
}

/** RFC 6238 defaults (SHA-1, 6 digits, 30 s), what authenticator apps use. */
const TOTP_CHECK = new TOTP({ crypto: new NobleCryptoPlugin(), base32: new ScureBase32Plugin() });

type CodeCheck = 'ok' | 'wrong' | 'used' | 'none';

function wrongCode(check: CodeCheck, more = ''): DomainError {
  return new DomainError('WRONG_CODE', (check === 'used' ? 'This code was used already; wait for the next one.' : 'The code is wrong.') + more);
}

export class DbAuthService implements AuthService {
  readonly #db: Database;
  readonly #users: UsersService;
  readonly #settings: SettingsService;
  readonly #opts: AuthOptions;
  readonly #passwordLockout: Lockout;
  readonly #codeLockout: Lockout;
  readonly #secrets: SecretBox;
  readonly passwordLength: { min: number; max: number };
  /** Whether a player's own registration with an email starts unverified (the email feature says, as its SMTP comes and goes). */
  #verifyEmails: () => boolean = () => false;

  readonly #audit: AuditLog;

  constructor(db: Database, users: UsersService, settings: SettingsService, opts: AuthOptions, secrets: SecretBox, audit: AuditLog) {
    this.#audit = audit;
    this.#db = db;
    this.#users = users;
    this.#settings = settings;
    this.#opts = opts;
    this.#secrets = secrets;
    this.passwordLength = { min: opts.passwordMinLength, max: opts.passwordMaxLength };
    this.#passwordLockout = new Lockout(db, AuthCredential, opts.lockout.password, 'passwords');
    this.#codeLockout = new Lockout(db, AuthTotp, opts.lockout.code, 'two-factor codes');
  }

  /**
   * Creates a session and returns its token (32 hex characters); only the token's hash is stored.
   * Without `expiresAt` it lasts sessionDays from its creation, both read off one clock reading.
   */
  async #newSession(userId: number, client: ClientInfo, verified: boolean, expiresAt?: string): Promise<string> {
    const token = randomBytes(16).toString('hex');
    const at = now();
    await AuthSession.insert(this.#db, {
      tokenHash: tokenHash(token),
      userId,
      ip: client.ip,
      userAgent: client.useragent ?? null,
      verified,
      failedCodes: 0,
      createdAt: at,
      expiresAt: expiresAt ?? this.#sessionEnd(at),
    });
    return token;
  }

  /** When a session begun at `from` ends: sessionDays later. */
  #sessionEnd(from = now()): string {
    return addSeconds(from, this.#opts.sessionDays * 86400);
  }

  /** The contract's password check: what login does before it opens a session. */
  async checkPassword(username: string, password: string): Promise<CredentialCheck> {
    const user = await this.#users.requireByUsername(username);
    await this.#passwordLockout.claim(user.id);
    const [credential] = await AuthCredential.select(this.#db, sql`where ${AuthCredential.c.userId} = ${user.id}`);
    const check = credential ? await checkPassword(credential.passwordHash, password) : { ok: false, rehash: false };
    if (!check.ok) {
      await this.#passwordLockout.failed(user.id);
      throw new DomainError('WRONG_PASSWORD', 'The password is wrong.');
    }
    await this.#passwordLockout.succeeded(user.id);
    if (credential && check.rehash) await AuthCredential.update(this.#db, credential.id, { passwordHash: await hashPassword(password), updatedAt: now() });
    return { userId: user.id, codeRequired: this.#settings.get().twoFactorEnabled && user.authStatus === 1 };
  }

  /** The contract's code check: a good code of the active secret, or WRONG_CODE. */
  async checkCode(userId: number, code: string): Promise<void> {
    const check = await this.#checkCode(userId, 'secret', code);
    if (check !== 'ok') throw wrongCode(check);
  }

  async login(username: string, password: string, client: ClientInfo): Promise<{ token: string; isTfaRequired: boolean }> {
    const { userId, codeRequired: isTfaRequired } = await this.checkPassword(username, password);
    const token = isTfaRequired
      ? await this.#newSession(userId, client, false, addSeconds(now(), TFA_PENDING_SECONDS))
      : await this.#newSession(userId, client, true);
    return { token, isTfaRequired };
  }

  async register(fields: NewAccount, client: ClientInfo): Promise<{ token: string; isEmailVerificationRequired: boolean }> {
    return this.#create(fields, client);
  }

  requireEmailVerification(when: () => boolean = () => true): void {
    this.#verifyEmails = when;
  }

  async setPassword(userId: number, password: string): Promise<void> {
    const user = await this.#users.requireById(userId);
    this.#checkPasswordLength(password);
    const passwordHash = await hashPassword(password);
    await this.#db.transaction(async () => {
      const C = AuthCredential.c;
      const { affectedRows } = await this.#db.run(sql`update ${AuthCredential} set ${C.passwordHash} = ${passwordHash}, ${C.updatedAt} = ${now()}
        where ${C.userId} = ${user.id}`);
      if (affectedRows === 0) await AuthCredential.insert(this.#db, { userId: user.id, passwordHash, updatedAt: now() });
      await this.#db.run(sql`delete from ${AuthSession} where ${AuthSession.c.userId} = ${user.id}`);
      await this.#passwordLockout.succeeded(user.id);
    });
  }

  #checkPasswordLength(password: string): void {
    const { passwordMinLength: min, passwordMaxLength: max } = this.#opts;
    if (password.length < min || password.length > max) throw new DomainError('INVALID_PASSWORD', `The password must be ${min} to ${max} characters long.`);
  }

  /** The contract's account creation: register's checks and hashing, without a session or the per-IP limit. */
  async createAccount(fields: NewAccount): Promise<{ userId: number }> {
    return this.#create(fields);
  }

  /**
   * Checks the fields, hashes the password and creates the account with its credential in one
   * transaction. A register (with its client) also counts the IP's accounts and opens a session.
   */
  async #create(fields: NewAccount): Promise<{ userId: number }>;
  async #create(fields: NewAccount, client: ClientInfo): Promise<{ token: string; isEmailVerificationRequired: boolean }>;
  async #create(fields: NewAccount, client?: ClientInfo): Promise<{ userId: number } | { token: string; isEmailVerificationRequired: boolean }> {
    const { username, password } = fields;
    const email = fields.email?.trim() ?? '';
    if (!USERNAME.test(username)) throw new DomainError('INVALID_USERNAME', 'The username must be 3 to 16 characters of A-Z, a-z, 0-9 and _.');
    this.#checkPasswordLength(password);
    const settings = this.#settings.get();
    if (email === '') {
      if (settings.registrationEmailRequired) {
        throw fields.email === undefined
          ? new DomainError('VALIDATION_ERROR', 'email is required')
          : new DomainError('INVALID_EMAIL', 'The email address is empty.');
      }
    } else if (email.length > 191 || !EMAIL.test(email)) {
      throw new DomainError('INVALID_EMAIL', 'The email address is not valid.');
    }
    // Hashed before the transaction, so no lock is held for the tens of milliseconds argon2 takes.
    const passwordHash = await hashPassword(password);
    return this.#db.transaction(async () => {
      if (client && settings.registerLimit > 0) await this.#checkRegisterLimit(client.ip, settings.registerLimit);
      // An account made at the server's command line comes from the server itself.
      // Only a player's own registration waits for the mailed link; the operator's command line vouches for the address.
      const isEmailVerificationRequired = Boolean(client && email && this.#verifyEmails());
      const user = await this.#users.createAccount({
        username,
        email: email || null,
        creationIP: client?.ip ?? '127.0.0.1',
        isVerified: !isEmailVerificationRequired,
      });
      await AuthCredential.insert(this.#db, { userId: user.id, passwordHash, updatedAt: now() });
      return client ? { token: await this.#newSession(user.id, client, true), isEmailVerificationRequired } : { userId: user.id };
    });
  }

  /**
   * Counts the ip's accounts under a lock on the ip's row (written first, so it is an exclusive
   * lock on MySQL and the write lock on SQLite): parallel registers from one ip are counted one
   * after the other, each seeing the accounts the ones before it created.
   */
  async #checkRegisterLimit(ip: string, limit: number): Promise<void> {
    const { ip: ipColumn, lockedAt } = AuthRegisterLock.c;
    const at = now();
    await this.#db.run(
      this.#db.dialect === 'mysql'
        ? sql`insert into ${AuthRegisterLock} (${ipColumn}, ${lockedAt}) values (${ip}, ${at}) on duplicate key update ${lockedAt} = values(${lockedAt})`
        : sql`insert into ${AuthRegisterLock} (${ipColumn}, ${lockedAt}) values (${ip}, ${at})
        on conflict (${ipColumn}) do update set ${lockedAt} = excluded.${lockedAt}`,
    );
    if ((await this.#users.countCreatedFrom(ip)) >= limit) {
      throw new DomainError('REGISTER_LIMIT', `At most ${limit} accounts may be registered from one IP address.`);
    }
  }

  /** Throws SESSION_NOT_FOUND unless the token is a live, verified, unexpired session. */
  async checkSession(token: string): Promise<void> {
    if ((await this.sessionUser(token)) === undefined) throw new DomainError('SESSION_NOT_FOUND', 'No live session has this token.');
  }

  async sessionUser(token: string): Promise<number | undefined> {
    const [row] = await this.#db.query(
      sql`select ${fields({ user_id: S.userId })}
        from ${AuthSession} where ${S.tokenHash} = ${tokenHash(token)} and ${S.verified} = 1 and ${S.expiresAt} > ${now()}`,
    );
    return row ? Number(row.user_id) : undefined;
  }

  async signIns(userId: number, limit: number): Promise<SignIn[]> {
    const rows = await this.#db.query(
      sql`select ${fields({ ip: S.ip, user_agent: S.userAgent, created_at: S.createdAt })} from ${AuthSession}
        where ${S.userId} = ${userId} and ${S.verified} = 1 order by ${S.createdAt} desc, ${S.id} desc limit ${countParam(limit)}`,
    );
    return rows.map((r) => ({ ip: r.ip, userAgent: r.user_agent, createdAt: r.created_at }));
  }

  async endSession(token: string): Promise<void> {
    await this.#db.run(sql`delete from ${AuthSession} where ${S.tokenHash} = ${tokenHash(token)}`);
  }

  /**
   * What the game auth plugin does with a player who is joining (its `SessionState`): register,
   * log in, enter a two-factor code, or come in on a live session opened from the same address
   * and client. A name in another letter case than the account's is refused, so two players
   * cannot share one account by case. A token is new each time: stored tokens are only hashes.
   */
  async gameSession(username: string, client: Required<ClientInfo>): Promise<GameSession> {
    if (!USERNAME.test(username)) throw new DomainError('INVALID_USERNAME', 'The username must be 3 to 16 characters of A-Z, a-z, 0-9 and _.');
    const user = await this.#users.findByUsername(username);
    if (!user) return { state: 'REGISTER_REQUIRED' };
    const realname = user.username;
    if (realname !== username) return { state: 'USERNAME_CASE_MISMATCH', realname };
    if (!user.isVerified) return { state: 'EMAIL_NOT_VERIFIED', realname };
    const [live] = await this.#db.query(sql`select ${fields({ verified: S.verified })} from ${AuthSession}
      where ${S.userId} = ${user.id} and ${S.ip} = ${client.ip} and ${S.userAgent} = ${client.useragent} and ${S.expiresAt} > ${now()}
      order by ${S.verified} desc limit 1`);
    if (!live) return { state: 'LOGIN_REQUIRED', realname };
    if (Number(live.verified) === 1) return { state: 'HAS_SESSION', token: await this.#newSession(user.id, client, true), realname };
    // A login from here is waiting for its code: a fresh pending token lets the plugin ask for it.
    return { state: 'TFA_REQUIRED', token: await this.#newSession(user.id, client, false, addSeconds(now(), TFA_PENDING_SECONDS)), realname };
  }

  /** A verified session for a user (e.g. after the game server's own check); `expiresAt` is a stored UTC timestamp. */
  async createSession(userId: number, client: ClientInfo, expiresAt?: string): Promise<string> {
    const user = await this.#users.requireById(userId);
    return this.#newSession(user.id, client, true, expiresAt);
  }

  /**
   * Checks a TOTP code (RFC 6238: 6 digits, 30 s, ±1 step) against the user's active or pending
   * secret. A good code claims its time step, so the same code (or an older one) is refused
   * afterwards, even when two requests race with it. Every check counts against the account's
   * cap on wrong codes, whichever login or enrolment it comes through.
   */
  async #checkCode(userId: number, which: 'secret' | 'pendingSecret', code: string): Promise<CodeCheck> {
    const [totp] = await AuthTotp.select(this.#db, sql`where ${O.userId} = ${userId}`);
    const secret = totp?.[which];
    if (!secret) return 'none';
    await this.#codeLockout.claim(userId);
    const check = await this.#verifyCode(userId, this.#secrets.open(secret, userId), code);
    if (check === 'ok') await this.#codeLockout.succeeded(userId);
    else await this.#codeLockout.failed(userId);
    return check;
  }

  async #verifyCode(userId: number, secret: string, code: string): Promise<CodeCheck> {
    const digits = code.replace(/\s+/g, '');
    if (!/^[0-9]{6}$/.test(digits)) return 'wrong';
    const result = await TOTP_CHECK.verify(digits, { secret, epoch: Math.floor(clockNow() / 1000), epochTolerance: 30 });
    if (!result.valid) return 'wrong';
    const { affectedRows } = await this.#db.run(
      sql`update ${AuthTotp} set ${O.lastStep} = ${result.timeStep} where ${O.userId} = ${userId} and ${O.lastStep} < ${result.timeStep}`,
    );
    return affectedRows > 0 ? 'ok' : 'used';
  }

  /** Completes a login that returned isTfaRequired. */
  async verifyTfa(token: string, code: string): Promise<void> {
    const [session] = await AuthSession.select(this.#db, sql`where ${S.tokenHash} = ${tokenHash(token)} and ${S.verified} = 0 and ${S.expiresAt} > ${now()}`);
    if (!session) throw new DomainError('SESSION_NOT_FOUND', 'No two-factor login is pending for this token (unknown, expired or verified already).');
    const check = await this.#checkCode(session.userId, 'secret', code);
    if (check !== 'ok') {
      // Retries are allowed, but not enough of them to guess a 6-digit code in the 5 minutes. The
      // count is kept by the database: wrong codes sent at once each count.
      await this.#db.run(sql`update ${AuthSession} set ${S.failedCodes} = ${S.failedCodes} + 1 where ${S.id} = ${session.id}`);
      const { affectedRows: ended } = await this.#db.run(
        sql`delete from ${AuthSession} where ${S.id} = ${session.id} and ${S.failedCodes} >= ${this.#opts.tfaMaxAttempts}`,
      );
      throw wrongCode(check, ended > 0 ? ' Too many wrong codes: log in again.' : '');
    }
    await AuthSession.update(this.#db, session.id, { verified: true, expiresAt: this.#sessionEnd() });
  }

  /** Starts enrolment: a new secret to show the user (as a QR code of otpauthUrl); active after enableTfa. */
  async setupTfa(userId: number): Promise<{ secret: string; otpauthUrl: string }> {
    const user = await this.#users.requireById(userId);
    const secret = generateSecret();
    const sealed = this.#secrets.seal(secret, user.id);
    await this.#db.transaction(async () => {
      const { affectedRows } = await this.#db.run(sql`update ${AuthTotp} set ${O.pendingSecret} = ${sealed} where ${O.userId} = ${user.id}`);
      if (affectedRows === 0) await AuthTotp.insert(this.#db, { userId: user.id, secret: null, pendingSecret: sealed, lastStep: 0 });
    });
    return { secret, otpauthUrl: generateURI({ issuer: this.#opts.tfaIssuer, label: user.username, secret }) };
  }

  /** Finishes enrolment with a code from the new secret: two-factor is on (authStatus 1). */
  async enableTfa(userId: number, code: string): Promise<void> {
    const user = await this.#users.requireById(userId);
    const check = await this.#checkCode(user.id, 'pendingSecret', code);
    if (check === 'none') throw new DomainError('VALIDATION_ERROR', 'No two-factor setup is pending for this user: call POST /api/auth/tfa/setup first.');
    if (check !== 'ok') throw wrongCode(check);
    await this.#db.transaction(async () => {
      await this.#db.run(sql`update ${AuthTotp} set ${O.secret} = ${O.pendingSecret}, ${O.pendingSecret} = null where ${O.userId} = ${user.id}`);
      await this.#users.setAuthStatus(user.id, 1);
    });
  }

  /**
   * Turns two-factor off (authStatus 0); logins waiting for a code are dropped. With a `code`
   * (the game-facing route) it must be a good code of the active secret; only the admin API turns
   * it off without one.
   */
  async disableTfa(userId: number, code?: string): Promise<void> {
    const user = await this.#users.requireById(userId);
    if (code !== undefined) {
      const check = await this.#checkCode(user.id, 'secret', code);
      if (check !== 'ok' && check !== 'none') throw wrongCode(check);
    }
    await this.#db.transaction(async () => {
      await this.#db.run(sql`delete from ${AuthTotp} where ${O.userId} = ${user.id}`);
      await this.#db.run(sql`delete from ${AuthSession} where ${S.userId} = ${user.id} and ${S.verified} = 0`);
      await this.#users.setAuthStatus(user.id, 0);
      await this.#audit.record({ action: 'auth.tfa.disable', target: { type: 'user', id: user.id }, summary: `Turned two-factor off for ${user.username}` });
    });
  }

  /**
   * Encrypts the secrets stored in clear (from before encryption, or from a server without a key)
   * and checks that the key opens one encrypted already, so a wrong key stops the boot instead of
   * failing every two-factor login. Runs before the server listens. Returns the rows encrypted.
   */
  async sealStoredSecrets(keyName: string): Promise<number> {
    if (!this.#secrets.enabled) return 0;
    const [sample] = await AuthTotp.select(this.#db, sql`where ${O.secret} like 'v1:%' limit 1`);
    if (sample && !this.#secrets.opens(sample.secret!, sample.userId)) {
      throw new ConfigError(`${keyName} does not decrypt the stored two-factor secrets: it is not the key they were encrypted with.`);
    }
    const rows = await AuthTotp.select(this.#db, sql`where ${O.secret} not like 'v1:%' or ${O.pendingSecret} not like 'v1:%'`);
    for (const { id, userId, secret, pendingSecret } of rows) {
      const seal = (value: string | null) => (value === null || isSealed(value) ? value : this.#secrets.seal(value, userId));
      await AuthTotp.update(this.#db, id, { secret: seal(secret), pendingSecret: seal(pendingSecret) });
    }
    return rows.length;
  }

  /** Deletes expired sessions (pending ones included); returns how many went. */
  async sweepSessions(): Promise<number> {
    const { affectedRows } = await this.#db.run(sql`delete from ${AuthSession} where ${S.expiresAt} <= ${now()}`);
    return affectedRows;
  }
}
