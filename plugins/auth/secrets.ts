/**
 * TOTP secrets at rest: AES-256-GCM under TOTP_ENCRYPTION_KEY (32 bytes, base64 or hex), bound to
 * the row they belong to, so a secret copied to another account does not decrypt. A stored value
 * without the `v1:` prefix is a secret from before encryption; the auth feature re-encrypts those
 * when it starts with a key (docs/features/users-auth.md: two-factor secrets). Without the
 * variable, a SQLite file's server keeps a key of its own beside the database.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    throw new ConfigError(
      'TOTP_ENCRYPTION_KEY must be 32 random bytes written as base64 (44 characters) or hex (64 characters); make one with `openssl rand ' + '-base64 32`.',
    );
  }
  return key;
}

/** Where a SQLite database's own key lives when TOTP_ENCRYPTION_KEY is not set. */
export function keyFileOf(dbFile: string): string {
  return `${dbFile}.totp-key`;
}

/** The key in `file`; undefined when there is none. A file that holds no key stops the boot. */
export function readKeyFile(file: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return parseKey(text);
  } catch {
    throw new ConfigError(`${file} does not hold a two-factor key (32 bytes as base64): restore it from a backup, or set TOTP_ENCRYPTION_KEY.`);
  }
}

/**
 * Makes a key in `file`, readable by its owner only; a server starting at the same moment that
 * made one first wins, and its key is the one returned.
 */
export function makeKeyFile(file: string): Buffer {
  const draft = `${file}.${process.pid}`;
  writeFileSync(draft, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    // link() never replaces an existing file: the whole key appears at once, or not at all.
    linkSync(draft, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(draft, { force: true });
  }
  return readKeyFile(file)!;
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
    return this.sealFor(`auth_totp:${userId}`, secret);
  }

  /** Encrypts a secret bound to `context` (another feature's: `email:smtp.password`). */
  sealFor(context: string, secret: string): string {
    if (!this.#key) throw new DomainError('SERVICE_UNAVAILABLE', 'Secrets set in the console need TOTP_ENCRYPTION_KEY set on the server.');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context));
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
    return this.openFor(`auth_totp:${userId}`, stored);
  }

  /** The secret sealFor sealed for `context`; throws when the key or the context is another. */
  openFor(context: string, stored: string): string {
    if (!this.#key) throw new DomainError('SERVICE_UNAVAILABLE', 'Stored secrets are encrypted, but TOTP_ENCRYPTION_KEY is not set on the server.');
    const raw = Buffer.from(stored.slice(PREFIX.length), 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
