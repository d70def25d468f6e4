import { Type } from '@sinclair/typebox';
import { auditRef } from '../../core/audit.ts';
import { everyRound } from '../../core/background.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { deliveryRef } from '../delivery/contract.ts';
import { emailRef } from '../email/contract.ts';
import { paymentsRef } from '../payments/contract.ts';
import { catalogueRef } from '../store/contract.ts';
import { usersRef } from '../users/contract.ts';
import { subscriptionsSection } from './console.ts';
import { subscriptionsRef } from './contract.ts';
import { entities } from './entities.ts';
import { GatewaySubscriptions } from './gateway.ts';
import { migrations } from './migrations/index.ts';
import { subscriptionsRoutes } from './routes.ts';
import { DbSubscriptionsService } from './service.ts';

const options = Type.Object({
  /** After a failed renewal the subscription, its role and commands, runs on this long before it ends. */
  graceHours: Type.Integer({ minimum: 0, default: 72 }),
  /** How often renewals due, grace periods run out and cancellations at the period's end are looked for. */
  sweepMs: Type.Integer({ minimum: 10, default: 5000 }),
  /** Days before a wallet renewal the player is mailed (with the email feature and SMTP set); 0: never. */
  reminderDays: Type.Integer({ minimum: 0, maximum: 365, default: 3 }),
  /** Which products have a plan on sale is read again this often (at once on the instance that changed a plan). */
  cacheSeconds: Type.Integer({ minimum: 1, default: 5 }),
});

export default defineFeature({
  name: 'subscriptions',
  requires: [catalogueRef, usersRef, creditsRef],
  options,
  entities,
  migrations,
  events: {
    'subscriptions.started': 'A player subscribed to a product (paid its first period, or began a free trial).',
    'subscriptions.renewed': "A subscription's next period was paid.",
    'subscriptions.payment_failed': 'A renewal could not be paid: the grace period starts.',
    'subscriptions.cancelled': 'A player or staff cancelled a subscription.',
    'subscriptions.ended': 'A subscription ended (cancelled, unpaid after the grace period, or refunded): its role and expiry commands followed.',
  },
  errors: {
    SUBSCRIPTION_PLAN_NOT_FOUND: 404,
    SUBSCRIPTION_NOT_FOUND: 404,
    SUBSCRIPTION_EXISTS: 409,
    SUBSCRIPTION_ENDED: 409,
    SUBSCRIPTION_NOT_REFUNDABLE: 409,
    SUBSCRIPTION_PLAN_NOT_IN_GROUP: 409,
    // The payments feature's, answered here too by a checkout at a gateway.
    GATEWAY_UNAVAILABLE: 400,
    GATEWAY_ERROR: 502,
    INVALID_URL: 400,
    PURCHASES_BLOCKED: 403,
  },
  async register(app, { db, events, services, settings, options: opts, log }) {
    const subs = new DbSubscriptionsService({
      db,
      events,
      settings,
      catalogue: services.get(catalogueRef),
      users: services.get(usersRef),
      credits: services.get(creditsRef),
      delivery: () => services.find(deliveryRef),
      audit: services.get(auditRef),
      graceHours: opts.graceHours,
      payments: () => services.find(paymentsRef),
      email: () => services.find(emailRef),
      reminderDays: opts.reminderDays,
      log,
    });
    const gateways = new GatewaySubscriptions(subs.deps, subs);
    subs.useGatewayCheckout((input) => gateways.checkout(input));
    services.provide(subscriptionsRef, subs);
    // Once every feature is registered: the payments feature, if enabled, hands this one its gateways' subscription events.
    app.addHook('onReady', async () => services.find(paymentsRef)?.onSubscriptionEvent((gateway, event) => gateways.handle(gateway, event)));
    subscriptionsRoutes(app, subs, gateways);
    everyRound(app, log, 'subscription plans cache', opts.cacheSeconds * 1000, () => subs.refreshPlans());
    everyRound(app, log, 'subscription renewal sweep', opts.sweepMs, async () => {
      await subs.sweep();
      await subs.remind();
    });
    return subs;
  },
  console: [subscriptionsSection],
});
