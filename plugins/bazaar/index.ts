import { auditRef } from '../../core/audit.ts';
import { Type } from '@sinclair/typebox';
import { defineFeature } from '../../core/features.ts';
import { usersRef } from '../users/contract.ts';
import { bazaarSection } from './console.ts';
import { bazaarRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { bazaarRoutes } from './routes.ts';
import { DbBazaarService } from './service.ts';

const options = Type.Object({
  /** Most items one user may keep on one server (INSERT_ERROR beyond it); 0 = no cap. */
  maxItemsPerServer: Type.Integer({ minimum: 0, default: 100 }),
});

export default defineFeature({
  name: 'bazaar',
  requires: [usersRef],
  options,
  entities,
  migrations,
  errors: { INSERT_ERROR: 400, DELETE_ERROR: 400, SERVER_NOT_FOUND: 404, ITEM_NOT_FOUND: 404 },
  async register(app, { db, services, settings, options: opts }) {
    const bazaar = new DbBazaarService(db, services.get(usersRef), settings, opts, services.get(auditRef));
    services.provide(bazaarRef, bazaar);
    await bazaarRoutes(app, bazaar);
    return bazaar;
  },
  console: [bazaarSection],
});
