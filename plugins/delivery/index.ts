import { Type } from '@sinclair/typebox';
import { Gauge } from 'prom-client';
import { everyRound } from '../../core/background.ts';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { storeRef } from '../store/contract.ts';
import { usersRef } from '../users/contract.ts';
import { deliverySection } from './console.ts';
import { deliveryRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { deliveryRoutes } from './routes.ts';
import { DbDeliveryService } from './service.ts';
import { Wakeups } from './wakeups.ts';

const options = Type.Object({
  /** How long a claimer has to ack before the row is handed out again. */
  leaseSeconds: Type.Integer({ minimum: 1, default: 60 }),
  /** Lapsed leases and failed acks a row may have before it stays `failed`. */
  maxTries: Type.Integer({ minimum: 1, default: 5 }),
  /** After a `failed` ack the row waits retryBaseSeconds × retryFactor^(tries − 1), at most retryMaxSeconds. */
  retryBaseSeconds: Type.Integer({ minimum: 1, default: 10 }),
  retryFactor: Type.Number({ minimum: 1, default: 3 }),
  retryMaxSeconds: Type.Integer({ minimum: 1, default: 600 }),
  /** SSE comment lines that keep proxies from closing an idle stream. */
  heartbeatSeconds: Type.Integer({ minimum: 1, default: 15 }),
  /** Streams one game server may hold open; a new one ends its oldest (a reconnecting plugin is never locked out). */
  streamsPerServer: Type.Integer({ minimum: 1, default: 4 }),
  /** A stream ends after this long and the client reconnects: a stream opened with a token since rotated does not outlive it by more. */
  streamMaxSeconds: Type.Integer({ minimum: 1, default: 3600 }),
  /** How often lapsed leases are looked for. */
  sweepMs: Type.Integer({ minimum: 10, default: 1000 }),
  /** Instances on one database: how often streams look for work another instance queued (0: never, one instance). */
  crossWakeMs: Type.Integer({ minimum: 0, default: 500 }),
  /** The console's dashboard lists an active game server not seen for this long. */
  silentMinutes: Type.Integer({ minimum: 1, default: 10 }),
  /** The console's dashboard lists a command still waiting (or claimed) this long after it was queued or last changed. */
  stuckMinutes: Type.Integer({ minimum: 1, default: 30 }),
});

export default defineFeature({
  name: 'delivery',
  requires: [storeRef, usersRef],
  options,
  entities,
  migrations,
  events: { 'delivery.failed': 'A command failed for good on a game server: its tries are used up.' },
  errors: { DELIVERY_SERVER_NOT_FOUND: 404, DELIVERY_COMMAND_NOT_FOUND: 404, DELIVERY_QUEUE_NOT_FOUND: 404, DELIVERY_NOT_SETTLED: 409 },
  async register(app, { db, events, services, settings, metrics, options: opts, log }) {
    const wakeups = new Wakeups();
    const users = services.get(usersRef);
    const delivery = new DbDeliveryService({
      db,
      events,
      settings,
      store: services.get(storeRef),
      users,
      audit: services.get(auditRef),
      wakeups,
      lease: opts,
      watch: opts,
    });
    services.provide(deliveryRef, delivery);
    // Inside the buy's transaction: a buy that rolls back leaves no command behind.
    events.onCommitting('store.order.completed', (order) => delivery.enqueue('purchase', order));
    events.onCommitting('store.order.refunded', (order) => delivery.orderRefunded(order));
    events.onCommitting('store.order.cleared', (e) => delivery.ordersCleared(e.orderIds));
    // A payment charged back (refunded or disputed at its gateway): the owner's chargeback commands, for a player with an account.
    events.onCommitting('payments.reversed', async (e) => {
      const player = e.userId === 0 ? undefined : await users.findById(e.userId);
      if (player) await delivery.chargeback({ userId: player.id, username: player.username, linkedAccounts: player.linkedAccounts, orderId: e.orderId });
    });
    events.onCommitting('users.role.revoked', (e) => (e.reason === 'expired' ? delivery.roleExpired(e.userId, e.roleId) : undefined));
    deliveryRoutes(app, delivery, {
      wakeups,
      heartbeatSeconds: opts.heartbeatSeconds,
      perServer: opts.streamsPerServer,
      maxSeconds: opts.streamMaxSeconds,
    });
    new Gauge({
      name: 'delivery_backlog',
      help: 'Commands not delivered yet, by game server ID and status (waiting: not handed out; claimed: not acked).',
      labelNames: ['server', 'status'] as const,
      registers: [metrics],
      async collect() {
        // A deleted server's series goes rather than freezing at its last value.
        this.reset();
        for (const b of await delivery.backlog()) {
          this.set({ server: String(b.serverId), status: 'waiting' }, b.waiting);
          this.set({ server: String(b.serverId), status: 'claimed' }, b.claimed);
        }
      },
    });

    everyRound(app, log, 'delivery lease sweep', opts.sweepMs, () => delivery.expireLeases());
    if (opts.crossWakeMs > 0) everyRound(app, log, "delivery wake-up for other instances' work", opts.crossWakeMs, () => delivery.wakeForOthers());
    return delivery;
  },
  console: [deliverySection],
});
