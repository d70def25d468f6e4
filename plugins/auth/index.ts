import { Type } from '@sinclair/typebox';
import { everyRound } from '../../core/background.ts';
import { defineFeature } from '../../core/features.ts';
import { usersRef } from '../users/contract.ts';
import { authRef, authSettings } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { authRoutes } from './routes.ts';
import { parseKey, SecretBox } from './secrets.ts';
import { DbAuthService } from './service.ts';

const rateLimit = (max: number) => Type.Object({
  /** Attempts per window for one username and ip; 0 = no limit. */
  max: Type.Integer({ minimum: 0, default: max }),
  windowSeconds: Type.Integer({ minimum: 1, default: 60 }),
}, { default: {} });

const lockout = (maxFailures: number, lockSeconds: number) => Type.Object({
  /** Wrong attempts in a row, from any ip or login, after which the account is locked. */
  maxFailures: Type.Integer({ minimum: 1, default: maxFailures }),
  /** How long the lock lasts (RATE_LIMITED with Retry-After meanwhile). */
  lockSeconds: Type.Integer({ minimum: 1, default: lockSeconds }),
}, { default: {} });

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
    WRONG_PASSWORD: 401, REGISTER_LIMIT: 400, INVALID_USERNAME: 400, INVALID_EMAIL: 400, INVALID_PASSWORD: 400,
    WRONG_CODE: 400, SESSION_NOT_FOUND: 404,
  },
  async register(app, { db, services, settings, options: opts, log, env }) {
    const secrets = new SecretBox(parseKey(env.TOTP_ENCRYPTION_KEY));
    const auth = new DbAuthService(db, services.get(usersRef), settings, opts, secrets);
    services.provide(authRef, auth);
    if (secrets.enabled) {
      const sealed = await auth.sealStoredSecrets();
      if (sealed) log.info({ sealed }, 'two-factor secrets stored in clear were encrypted');
    } else {
      log.warn('TOTP_ENCRYPTION_KEY is not set: two-factor enrolment is refused until it is (README: two-factor secrets).');
    }
    await authRoutes(app, auth, settings, opts.rateLimit);
    everyRound(app, log, 'session sweep', opts.sweepSeconds * 1000, () => auth.sweepSessions());
  },
});
