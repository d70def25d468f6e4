import { everyRound } from '../../core/background.ts';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { Type } from '@sinclair/typebox';
import { playersSection, rolesSection } from './console.ts';
import { usersRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { adminRoutes, userRoutes } from './routes.ts';
import { DbUsersService } from './service.ts';

const options = Type.Object({
  /** How often expired role assignments are deleted (and chat roles removed). */
  sweepSeconds: Type.Integer({ minimum: 1, default: 60 }),
});

export default defineFeature({
  name: 'users',
  options,
  entities,
  migrations,
  events: {
    'users.created': 'A user registered.',
    'users.role.granted': 'A role was granted, or the expiry of a held role changed.',
    'users.role.revoked': 'A role was revoked or expired.',
  },
  errors: { USER_NOT_FOUND: 404, USERNAME_ALREADY_EXIST: 400, EMAIL_ALREADY_EXIST: 400, ROLE_NOT_FOUND: 404 },
  async register(app, ctx) {
    const { db, events, services, options: opts, log } = ctx;
    const users = new DbUsersService(db, events, services.get(auditRef));
    services.provide(usersRef, users);
    await userRoutes(app, users, ctx);
    await adminRoutes(app, users, ctx);
    everyRound(app, log, 'role expiry sweep', opts.sweepSeconds * 1000, () => users.sweepExpired());
    return users;
  },
  console: [playersSection, rolesSection],
});
