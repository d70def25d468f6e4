/**
 * TOTP secrets at rest: AES-256-GCM under TOTP_ENCRYPTION_KEY (32 bytes, base64 or hex), bound to
 * the row they belong to, so a secret copied to another account does not decrypt. A stored value
 * without the `v1:` prefix is a secret from before encryption; the auth feature re-encrypts those
 * when it starts with a key (README: two-factor secrets).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';

const PREFIX = 'v1:';

export function isSealed(stored: string): boolean {
  return stored.startsWith(PREFIX);
}

/** The key from the environment's text; undefined when unset. Anything but 32 bytes stops the boot. */
export function parseKey(text: string | undefined): Buffer | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(value) && key.toString('base64') !== value)) {
    throw new ConfigError('TOTP_ENCRYPTION_KEY must be 32 random bytes written as base64 (44 characters) or hex (64 characters); make one with `openssl rand -base64 32`.');
  }
  return key;
}

export class SecretBox {
  readonly #key: Buffer | undefined;

  constructor(key: Buffer | undefined) {
    this.#key = key;
  }

  get enabled(): boolean {
    return this.#key !== undefined;
  }

  /** Encrypts a secret for one user's row. */
  seal(secret: string, userId: number): string {
    if (!this.#key) throw new DomainError('SERVICE_UNAVAILABLE', 'Two-factor enrolment needs TOTP_ENCRYPTION_KEY set on the server.');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(`auth_totp:${userId}`));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /** True when this key decrypts the stored value. */
  opens(stored: string, userId: number): boolean {
    try {
      this.open(stored, userId);
      return true;
    } catch {
      return false;
    }
  }

  /** The secret of a stored value; a value from before encryption is returned as it is. */
  open(stored: string, userId: number): string {
    if (!isSealed(stored)) return stored;
    if (!this.#key) throw new DomainError('SERVICE_UNAVAILABLE', 'The two-factor secrets are encrypted, but TOTP_ENCRYPTION_KEY is not set on the server.');
    const raw = Buffer.from(stored.slice(PREFIX.length), 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(`auth_totp:${userId}`));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
