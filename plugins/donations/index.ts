/**
 * Donation boards (`GET /api/store/donations`), fed by the store's real-money payments.
 *
 * How the payments get here: donations keeps its own table, written by an `onCommitting` listener
 * of `store.order.completed` for orders of type `payment`. The row commits or rolls back with the
 * order itself, the event carries everything a board line shows (username, amount, currency, time),
 * so the store exposes no query for us and we never read its tables, and a board is one query on
 * one table (no per-row user lookups). The cost: payments recorded while this feature is disabled
 * are not on the boards.
 */
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { defineFeature } from '../../core/features.ts';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import { EXAMPLE, dateStr, str, usernameStr, type TypeBoxProvider } from '../../core/schemas.ts';
import { storeRef } from '../store/contract.ts';
import { donationsSection } from './console.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { DEFAULT_LIMIT, DONATION_TYPES, Donations, MAX_LIMIT, parseLimit, parseType } from './service.ts';

const DonationEntry = Type.Object({
  display_name: usernameStr(), username: usernameStr(), total: str('`<amount> <currency>`', '25.00 USD'), raw_total: str('decimal', '25.00'),
  currency: str(undefined, EXAMPLE.currency), date: dateStr(),
});

// Loose on purpose: a bad type or limit is INVALID_TYPE / INVALID_LIMIT (api.md), not a validation error.
const Query = Type.Object({ type: Type.Optional(Type.Unknown()), limit: Type.Optional(Type.Unknown()) });

export default defineFeature({
  name: 'donations',
  requires: [storeRef],
  entities,
  migrations,
  errors: { INVALID_TYPE: 400, INVALID_LIMIT: 400 },
  async register(app, { db, events, settings }) {
    const donations = new Donations(db);
    events.onCommitting('store.order.completed', async (order) => {
      if (order.type !== 'payment') return;
      await donations.record({
        orderId: order.orderId, userId: order.userId, username: order.username, amount: order.total,
        currency: order.currency, creationDate: order.creationDate,
      });
    });

    app.withTypeProvider<TypeBoxProvider>().get('/api/store/donations', {
      // The game plugin's donation boards: it reads `error` into its enum (docs/clients.md).
      config: { clientErrors: gamePlugin() },
      schema: {
        tags: ['store'], summary: 'Donation boards',
        description: `type: ${DONATION_TYPES.join(', ')}. The top boards rank users by the sum of their payments in the current `
          + `calendar year, month or day (site time zone), one line per user and currency; latest lists single payments, `
          + `newest first. limit: 1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}.`,
        querystring: Query,
        response: { 200: Type.Array(DonationEntry) },
        errors: ['INVALID_TYPE', 'INVALID_LIMIT'],
      },
    }, async ({ query }) => {
      const type = parseType(query.type);
      const limit = parseLimit(query.limit);
      const { timezone } = settings.get();
      return (await donations.board(type, limit, timezone)).map((d) => ({
        display_name: d.username, username: d.username, total: `${formatMoney(d.amount)} ${d.currency}`,
        raw_total: formatMoney(d.amount), currency: d.currency, date: displayTimestamp(d.date, timezone),
      }));
    });
    return donations;
  },
  console: [donationsSection],
});
