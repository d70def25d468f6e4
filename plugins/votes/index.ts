import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { voteLinksSection } from './console.ts';
import { votesRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { votesRoutes } from './routes.ts';
import { DbVotesService } from './service.ts';

export default defineFeature({
  name: 'votes',
  entities,
  migrations,
  errors: { VOTE_LINK_NOT_FOUND: 404 },
  async register(app, { db, services }) {
    const votes = new DbVotesService(db, services.get(auditRef));
    services.provide(votesRef, votes);
    await votesRoutes(app, votes);
    return votes;
  },
  console: [voteLinksSection],
});
