/**
 * Password hashes. New ones are argon2id; accounts imported from older sites may carry bcrypt
 * (`$2y$`, `$2a$`, `$2b$`) or AuthMe `$SHA$salt$hash` hashes, which are verified and then replaced
 * at the next good login.
 */
import { hash as digest, timingSafeEqual } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { hash, parseOptions, verify } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';
import pLimit from 'p-limit';

/** OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane); hashes made with other costs are upgraded. */
const ARGON2 = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

/**
 * Argon2 runs at most one hash a core the process may use: each walks its 19 MiB, and more at once
 * on a core only take turns evicting each other from its caches (docs/performance.md). The others wait here,
 * which also leaves the rest of the thread pool to files and lookups.
 */
export const argon2Work = pLimit(availableParallelism());

export function hashPassword(password: string): Promise<string> {
  // @node-rs/argon2 makes argon2id unless told otherwise; it runs off the event loop.
  return argon2Work(() => hash(password, ARGON2));
}

export interface PasswordCheck {
  ok: boolean;
  /** The password matched a hash that is not argon2id with today's costs: store a new one. */
  rehash: boolean;
}

export function sha256Hex(text: string): string {
  return digest('sha256', text, 'hex');
}

function isCurrentArgon2(stored: string): boolean {
  if (!stored.startsWith('$argon2id$')) return false;
  const o = parseOptions(stored);
  return o.memoryCost === ARGON2.memoryCost && o.timeCost === ARGON2.timeCost && o.parallelism === ARGON2.parallelism;
}

async function matches(stored: string, password: string): Promise<boolean> {
  if (stored.startsWith('$argon2')) return argon2Work(() => verify(stored, password));
  if (/^\$2[aby]\$/.test(stored)) return bcrypt.compare(password, stored);
  // AuthMe: sha256(sha256(password) + salt), hex.
  const authMe = /^\$SHA\$([^$]+)\$([0-9a-fA-F]{64})$/.exec(stored);
  if (authMe) {
    const expected = Buffer.from(authMe[2]!.toLowerCase(), 'hex');
    return timingSafeEqual(Buffer.from(sha256Hex(sha256Hex(password) + authMe[1]), 'hex'), expected);
  }
  return false;
}

export async function checkPassword(stored: string, password: string): Promise<PasswordCheck> {
  let ok: boolean;
  try {
    ok = await matches(stored, password);
  } catch {
    // A damaged stored hash (bad base64, cut short) is a failed login, not a fault.
    ok = false;
  }
  return { ok, rehash: ok && !isCurrentArgon2(stored) };
}
