import { Type } from '@sinclair/typebox';
import { Counter } from 'prom-client';
import { ConfigError } from '../../core/config.ts';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { formatMoney, parseMoney } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import { usersRef } from '../users/contract.ts';
import { creditsPanel } from './console.ts';
import { creditsRef } from './contract.ts';
import { CreditsWallet, entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { creditsRoutes } from './routes.ts';
import { DbCreditsService } from './service.ts';

const options = Type.Object({
  /** The most one balance may hold; a change beyond it is refused with INVALID_AMOUNT. */
  maxBalance: Type.String({ default: '9999999999999.99' }),
});

export default defineFeature({
  name: 'credits',
  requires: [usersRef],
  options,
  entities,
  migrations,
  events: {
    'credits.changed': 'Credits moved: one ledger row (delta and balance after, in cents).',
  },
  errors: { NOT_ENOUGH_CREDITS: 400, TARGET_USER_NOT_FOUND: 404, INVALID_TARGET: 400 },
  async register(app, { db, events, services, settings, metrics, options: opts }) {
    const maxBalance = parseMoney(opts.maxBalance);
    if (maxBalance === undefined) throw new ConfigError('plugins.credits.maxBalance must be a decimal with at most two places, e.g. "1000000.00".');
    const credits = new DbCreditsService(db, events, maxBalance, services.get(auditRef));
    services.provide(creditsRef, credits);
    const moved = new Counter({
      name: 'credits_moved_cents_total',
      help: 'Credits added to (in) and taken from (out) balances, in cents.',
      labelNames: ['direction'] as const,
      registers: [metrics],
    });
    // Each direction's series taken once: a transfer counts two movements.
    const movedIn = moved.labels({ direction: 'in' });
    const movedOut = moved.labels({ direction: 'out' });
    events.on('credits.changed', (e) => (e.delta > 0 ? movedIn : movedOut).inc(Math.abs(e.delta)));
    const users = services.get(usersRef);
    const w = CreditsWallet.as('w');
    // The profile's `credit`, read in the profile's own statement from this feature's table.
    users.addProfileField({
      field: 'credit',
      select: (accountId) => sql`coalesce((select ${w.c.balance} from ${w} where ${w.c.userId} = ${accountId}), 0)`,
      show: (value) => formatMoney(Number(value)),
    });
    // Its share of a player's page in the staff console (shown when the console runs).
    users.addPlayerPanel(creditsPanel(credits, settings));
    await creditsRoutes(app, credits, users, settings);
  },
});
