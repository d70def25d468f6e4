/**
 * The auth feature's contract: checking a platform account's credentials for peers that sign
 * people in themselves (the staff console), with the same lockouts as the API's login.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';

export interface CredentialCheck {
  userId: number;
  /** The account has two-factor on (and the site allows it): a code must follow through checkCode. */
  codeRequired: boolean;
}

export interface NewAccount {
  username: string;
  password: string;
  /** Required while the site setting registrationEmailRequired is on. */
  email?: string;
}

export interface AuthService {
  /** The password lengths register accepts (plugins.auth), for a form's hint. */
  readonly passwordLength: { min: number; max: number };
  /**
   * Checks a username and password; counts against the account's password lockout. Throws
   * USER_NOT_FOUND, WRONG_PASSWORD or RATE_LIMITED (with Retry-After) while locked.
   */
  checkPassword(username: string, password: string): Promise<CredentialCheck>;
  /** Checks a TOTP code of the account's active secret, once per time step. Throws WRONG_CODE or RATE_LIMITED. */
  checkCode(userId: number, code: string): Promise<void>;
  /**
   * Registers an account with a password under the API's limits (username, password length,
   * email, accounts per ip) and opens a session. Throws the API register's codes.
   */
  register(fields: NewAccount, client: ClientInfo): Promise<{ token: string; isEmailVerificationRequired: boolean }>;
  /**
   * From now on, while `when` says so (always, without it), accounts registered with an email start
   * unverified (isVerified false) and register says isEmailVerificationRequired; the caller mails the
   * link (on `users.created`). Called while features register, by the feature that sends the mail.
   */
  requireEmailVerification(when?: () => boolean): void;
  /**
   * Sets an account's password (a reset by a mailed link) and ends its sessions, so whoever knew
   * the old password is signed out. Throws INVALID_PASSWORD (length) or USER_NOT_FOUND.
   */
  setPassword(userId: number, password: string): Promise<void>;
  /**
   * Creates an account with a password, as register does but without a session or the per-IP
   * limit (the operator's command line). Throws INVALID_USERNAME, INVALID_PASSWORD, INVALID_EMAIL,
   * VALIDATION_ERROR (email required), USERNAME_ALREADY_EXIST or EMAIL_ALREADY_EXIST.
   */
  createAccount(fields: NewAccount): Promise<{ userId: number }>;
  /** A verified session for a user whose credentials a peer checked; `expiresAt` defaults to the configured lifetime. */
  createSession(userId: number, client: ClientInfo, expiresAt?: string): Promise<string>;
  /** The user of a live, verified session token; undefined for an unknown, pending or expired one. */
  sessionUser(token: string): Promise<number | undefined>;
  /** Ends a session (signing out); an unknown token changes nothing. */
  endSession(token: string): Promise<void>;
  /** The account's sign-ins the sessions still hold, newest first (a disputed payment's evidence). */
  signIns(userId: number, limit: number): Promise<SignIn[]>;
}

/** A sign-in: when, from where, with what. */
export interface SignIn {
  ip: string;
  userAgent: string | null;
  /** Stored UTC timestamp. */
  createdAt: string;
}

/** Where a session was opened from (kept with it, and what the register limit counts by). */
export interface ClientInfo {
  ip: string;
  useragent?: string;
}

export const authRef = createServiceRef<AuthService>('auth');

/**
 * Secrets other features keep (a mail server's password, a gateway's keys), sealed with the
 * two-factor secrets' key (AES-256-GCM, the key outside the database), each bound to `context`.
 */
export interface SecretSealer {
  /** A key is set: without one, seal throws SERVICE_UNAVAILABLE. */
  readonly enabled: boolean;
  seal(context: string, secret: string): string;
  open(context: string, stored: string): string;
}

export const secretsRef = createServiceRef<SecretSealer>('auth.secrets');

/** The auth feature's site settings (its definition declares them). */
export const authSettings = {
  registerLimit: {
    schema: Type.Integer({ minimum: 0, default: 3, description: 'accounts one IP may register; 0 = no limit', examples: [3] }),
    label: 'Accounts per IP',
    hint: '0 = no limit.',
  },
  twoFactorEnabled: { schema: Type.Boolean({ default: true }), label: 'Players may turn on two-factor sign-in' },
  registrationEmailRequired: { schema: Type.Boolean({ default: true }), label: 'An email is required to register' },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof authSettings> {}
}
