import { Type } from '@sinclair/typebox';
import { auditRef } from '../../core/audit.ts';
import { ConfigError } from '../../core/config.ts';
import type { EventName } from '../../core/events.ts';
import { defineFeature } from '../../core/features.ts';
import { notificationsSection } from './console.ts';
import { usersRef } from '../users/contract.ts';
import { EndpointAddresses } from './addresses.ts';
import { notificationsRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { notificationsRoutes } from './routes.ts';
import { DbNotificationsService, TEST_EVENT } from './service.ts';
import { DeliveryWorker } from './worker.ts';

const options = Type.Object({
  /** Sends in flight to one endpoint at most (per server process). */
  concurrency: Type.Integer({ minimum: 1, default: 4 }),
  /** A try without a full answer within this fails. */
  timeoutMs: Type.Integer({ minimum: 100, default: 10000 }),
  /** The delay before each retry, growing; after the last one a delivery stays failed. */
  retryDelaysSeconds: Type.Array(Type.Integer({ minimum: 1 }), { default: [5, 60, 300, 1800, 7200, 18000, 36000] }),
  /** A claimed delivery whose sender died goes out again after this; more than timeoutMs. */
  leaseSeconds: Type.Integer({ minimum: 1, default: 60 }),
  /** How much of an endpoint's answer is kept with the attempt. */
  responseBytes: Type.Integer({ minimum: 0, default: 1024 }),
  /** How long the worker waits after a wake-up, so that a busy spell's events are claimed and sent together. */
  batchMs: Type.Integer({ minimum: 0, default: 50 }),
  /**
   * Sends started per second at most while requests keep this process busy (its event loop, or the
   * machine's CPUs, over 75 % used while they emit events): a rush of purchases is served at full
   * speed and its announcements follow when it passes. Unlimited otherwise.
   */
  busySendsPerSecond: Type.Integer({ minimum: 1, default: 100 }),
  /** How often the queue is looked at without a wake-up (retries come due, other processes' events, lapsed leases). */
  pollMs: Type.Integer({ minimum: 10, default: 1000 }),
  /** Days a delivery that ended (delivered or failed) is kept, with its tries and its event; 0 keeps them all. */
  retentionDays: Type.Integer({ minimum: 0, default: 30 }),
  /** How long this process may go on using subscriptions another process changed. */
  endpointsCacheSeconds: Type.Integer({ minimum: 0, default: 5 }),
  /**
   * Hosts (`relay.example`, `10.0.0.5:8080`) of the owner's relays in front of Discord that a Discord
   * announcement may also go to, over http or https; outbound.allow still decides an address inside.
   */
  discordHosts: Type.Array(Type.String(), { default: [] }),
});

export default defineFeature({
  name: 'notifications',
  options,
  entities,
  migrations,
  events: { [TEST_EVENT]: 'A test message sent from the console or the admin API to one endpoint.' },
  errors: { NOTIFICATION_ENDPOINT_NOT_FOUND: 404, NOTIFICATION_DELIVERY_NOT_FOUND: 404, NOTIFICATION_UNKNOWN_EVENT: 400, NOTIFICATION_DELIVERY_QUEUED: 409 },
  async register(app, { db, events, services, settings, log, outbound, options: opts }) {
    if (opts.leaseSeconds * 1000 <= opts.timeoutMs) {
      throw new ConfigError('plugins.notifications.leaseSeconds must be longer than timeoutMs, or a slow send would be sent twice at once.');
    }
    const addresses = new EndpointAddresses(outbound, opts.discordHosts);
    const declared = () => events.declared();
    // Announcements name the player an event is about; users is optional, looked up when it runs.
    const nameOf = async (id: number) => (await services.find(usersRef)?.findById(id))?.username;
    const notifications = new DbNotificationsService(db, services.get(auditRef), declared, opts.endpointsCacheSeconds, nameOf, addresses);
    const worker = new DeliveryWorker(
      db,
      opts,
      log,
      (event, payload, created) => notifications.announcement(event, payload, created),
      (event) => notifications.subscribers(event),
      addresses,
    );
    notifications.onQueued = () => worker.queued();
    services.provide(notificationsRef, notifications);
    // Inside the emitting transaction: the event is queued with the change it tells of, or not at all.
    for (const { name } of events.declared()) events.onCommitting(name as EventName, (payload) => notifications.enqueue(name, payload));
    await notificationsRoutes(app, notifications, settings, declared);
    app.addHook('onReady', async () => {
      await notifications.refresh(true);
      worker.start();
    });
    app.addHook('preClose', () => worker.stop());
    return notifications;
  },
  console: [notificationsSection],
});
