import { Type } from '@sinclair/typebox';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { catalogueRef, ordersRef } from '../store/contract.ts';
import { supportRef } from '../support/contract.ts';
import { usersRef } from '../users/contract.ts';
import { votesRef } from '../votes/contract.ts';
import { importsSection } from './console.ts';
import { importsRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { DbImportsService } from './service.ts';

const options = Type.Object({
  /** A LeaderOS site lists no users: they are read by id, and the scan ends after this many ids in a row with none. */
  leaderosMaxMissing: Type.Integer({ minimum: 1, default: 50 }),
  /** A running import's kept report (what the console shows while it goes) is brought up to date at most this often. */
  progressEveryMs: Type.Integer({ minimum: 0, default: 1000 }),
  /** The largest payments CSV the console takes, in bytes. */
  csvMaxBytes: Type.Integer({ minimum: 1024, default: 20_971_520 }),
});

export default defineFeature<typeof options, DbImportsService>({
  name: 'imports',
  requires: [usersRef, creditsRef],
  options,
  entities,
  migrations,
  async register(_app, { db, services, options }) {
    const peers = () => ({
      users: services.get(usersRef),
      credits: services.get(creditsRef),
      votes: services.find(votesRef),
      support: services.find(supportRef),
      catalogue: services.find(catalogueRef),
      orders: services.find(ordersRef),
    });
    const imports = new DbImportsService(db, peers, services.get(auditRef), { maxMissing: options.leaderosMaxMissing, progressEvery: options.progressEveryMs });
    services.provide(importsRef, imports);
    return imports;
  },
  console: [importsSection],
});
