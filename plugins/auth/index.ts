import { auditRef } from '../../core/audit.ts';
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { everyRound } from '../../core/background.ts';
import type { Database } from '../../core/db.ts';
import { defineFeature } from '../../core/features.ts';
import { sql } from '../../core/sql.ts';
import { usersRef } from '../users/contract.ts';
import { authRef, authSettings, secretsRef } from './contract.ts';
import { AuthTotp, entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { authRoutes } from './routes.ts';
import { keyFileOf, makeKeyFile, parseKey, readKeyFile, SecretBox } from './secrets.ts';
import { DbAuthService } from './service.ts';

const rateLimit = (max: number) =>
  Type.Object(
    {
      /** Attempts per window for one username and ip; 0 = no limit. */
      max: Type.Integer({ minimum: 0, default: max }),
      windowSeconds: Type.Integer({ minimum: 1, default: 60 }),
    },
    { default: {} },
  );

const lockout = (maxFailures: number, lockSeconds: number) =>
  Type.Object(
    {
      /** Wrong attempts in a row, from any ip or login, after which the account is locked. */
      maxFailures: Type.Integer({ minimum: 1, default: maxFailures }),
      /** How long the lock lasts (RATE_LIMITED with Retry-After meanwhile). */
      lockSeconds: Type.Integer({ minimum: 1, default: lockSeconds }),
    },
    { default: {} },
  );

const options = Type.Object({
  /** Lifetime of a session made by login, register or POST /api/auth/sessions without `expires`. */
  sessionDays: Type.Integer({ minimum: 1, default: 30 }),
  passwordMinLength: Type.Integer({ minimum: 1, default: 6 }),
  passwordMaxLength: Type.Integer({ minimum: 1, default: 128 }),
  /** Shown by authenticator apps next to the account name. */
  tfaIssuer: Type.String({ minLength: 1, default: 'Community' }),
  /** Wrong two-factor codes after which a pending login is dropped. */
  tfaMaxAttempts: Type.Integer({ minimum: 1, default: 5 }),
  rateLimit: Type.Object({ login: rateLimit(10), register: rateLimit(5) }, { default: {} }),
  /** Per-account caps on wrong passwords and on wrong two-factor codes (all pending logins together). */
  lockout: Type.Object({ password: lockout(10, 900), code: lockout(10, 900) }, { default: {} }),
  /** How often expired sessions are deleted. */
  sweepSeconds: Type.Integer({ minimum: 1, default: 3600 }),
});

export default defineFeature({
  name: 'auth',
  requires: [usersRef],
  options,
  entities,
  migrations,
  settings: authSettings,
  errors: {
    WRONG_PASSWORD: 401,
    REGISTER_LIMIT: 400,
    INVALID_USERNAME: 400,
    INVALID_EMAIL: 400,
    INVALID_PASSWORD: 400,
    WRONG_CODE: 400,
    SESSION_NOT_FOUND: 404,
  },
  async register(app, { db, services, settings, options: opts, log, env }) {
    const { key, name, said } = await twoFactorKey(env, db);
    const secrets = new SecretBox(key);
    const auth = new DbAuthService(db, services.get(usersRef), settings, opts, secrets, services.get(auditRef));
    services.provide(authRef, auth);
    services.provide(secretsRef, {
      get enabled() {
        return secrets.enabled;
      },
      seal: (context, secret) => secrets.sealFor(context, secret),
      open: (context, stored) => secrets.openFor(context, stored),
    });
    if (said) log[said.level](said.msg);
    const sealed = await auth.sealStoredSecrets(name);
    if (sealed) log.info({ sealed }, 'two-factor secrets stored in clear were encrypted');
    authRoutes(app, auth, settings, opts.rateLimit);
    everyRound(app, log, 'session sweep', opts.sweepSeconds * 1000, () => auth.sweepSessions());
  },
});

/**
 * The key for two-factor secrets, the name a boot error gives it, and the line the start says
 * about it (docs/features/users-auth.md: two-factor secrets). TOTP_ENCRYPTION_KEY wins; without
 * it a SQLite file keeps a key of its own beside it, made at first start, so two-factor works on
 * a default install. It is not made where secrets sealed with another key are stored already:
 * that key is missing.
 */
async function twoFactorKey(env: NodeJS.ProcessEnv, db: Database): Promise<{ key?: Buffer; name: string; said?: { level: 'info' | 'warn'; msg: string } }> {
  const name = 'TOTP_ENCRYPTION_KEY';
  const fromEnv = parseKey(env.TOTP_ENCRYPTION_KEY);
  if (fromEnv) return { key: fromEnv, name };
  // An in-memory database's secrets end with the process, and so may its key.
  if (db.dialect === 'sqlite' && !db.sqliteFile) return { key: randomBytes(32), name };
  if (db.sqliteFile) {
    const file = keyFileOf(db.sqliteFile);
    const instead = `(${name}, when set, takes its place)`;
    const kept = readKeyFile(file);
    if (kept)
      return { key: kept, name: `The key in ${file}`, said: { level: 'info', msg: `Two-factor secrets are encrypted with the key in ${file} ${instead}.` } };
    const { secret, pendingSecret } = AuthTotp.c;
    const [sealed] = await db.query(sql`select 1 as found from ${AuthTotp} where ${secret} like 'v1:%' or ${pendingSecret} like 'v1:%' limit 1`);
    if (!sealed) {
      return {
        key: makeKeyFile(file),
        name: `The key in ${file}`,
        said: { level: 'info', msg: `Made a key for two-factor secrets in ${file}, readable by its owner only: back it up with the database ${instead}.` },
      };
    }
  }
  return {
    name,
    said: {
      level: 'warn',
      msg:
        `${name} is not set: two-factor enrolment is refused, whatever the twoFactorEnabled site setting says, until it ` +
        `is (docs/features/users-auth.md: two-factor secrets).`,
    },
  };
}
