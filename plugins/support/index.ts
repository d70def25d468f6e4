import { defineFeature } from '../../core/features.ts';
import { usersRef } from '../users/contract.ts';
import { supportRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { supportRoutes } from './routes.ts';
import { DbSupportService } from './service.ts';

export default defineFeature({
  name: 'support',
  requires: [usersRef],
  entities,
  migrations,
  async register(app, { db, events, services, settings }) {
    const support = new DbSupportService(db, events, services.get(usersRef), settings);
    services.provide(supportRef, support);
    await supportRoutes(app, support);
  },
});
