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
import { defineFeature } from '../../core/features.ts';
import { ordersRef } from '../store/contract.ts';
import { donationsSection } from './console.ts';
import { donationsRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { donationsRoutes } from './routes.ts';
import { DbDonationsService } from './service.ts';

export default defineFeature({
  name: 'donations',
  requires: [ordersRef],
  entities,
  migrations,
  errors: { INVALID_TYPE: 400, INVALID_LIMIT: 400 },
  async register(app, { db, events, services, settings }) {
    const donations = new DbDonationsService(db);
    events.onCommitting('store.order.completed', async (order) => {
      // A test order moved no money: it counts toward no goal or board.
      if (order.type !== 'payment' || order.test) return;
      await donations.record({
        orderId: order.orderId,
        userId: order.userId,
        username: order.username,
        amount: order.total,
        currency: order.currency,
        creationDate: order.creationDate,
      });
    });
    // An order another store took, brought by an import: on the boards at its own date.
    events.onCommitting('store.order.imported', async (order) => {
      const { orderId, userId, username, total, currency, creationDate } = order;
      await donations.record({ orderId, userId, username, amount: total, currency, creationDate });
    });

    services.provide(donationsRef, donations);
    await donationsRoutes(app, donations, settings);
    return donations;
  },
  console: [donationsSection],
});
