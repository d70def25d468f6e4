/**
 * The auth feature's contract: checking a platform account's credentials for peers that sign
 * people in themselves (the staff console), with the same lockouts as the API's login.
 */
import { createServiceRef } from '../../core/registry.ts';

export interface CredentialCheck {
  userId: number;
  /** The account has two-factor on (and the site allows it): a code must follow through checkCode. */
  codeRequired: boolean;
}

export interface AuthService {
  /**
   * Checks a username and password; counts against the account's password lockout. Throws
   * USER_NOT_FOUND, WRONG_PASSWORD or RATE_LIMITED (with Retry-After) while locked.
   */
  checkPassword(username: string, password: string): Promise<CredentialCheck>;
  /** Checks a TOTP code of the account's active secret, once per time step. Throws WRONG_CODE or RATE_LIMITED. */
  checkCode(userId: number, code: string): Promise<void>;
}

export const authRef = createServiceRef<AuthService>('auth');
