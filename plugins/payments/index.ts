/**
 * Real money in: checkouts at payment gateways (Stripe, PayPal, or a gateway another feature
 * registers through the contract) whose signed webhooks record the payment through the store (a
 * `payment` order, its credits, the donation entry; for a direct purchase, the store's buy)
 * exactly once, and take it back on a refund or dispute. Credentials come from the environment or the console (sealed); a gateway without them is off.
 */
import { Type } from '@sinclair/typebox';
import { auditRef } from '../../core/audit.ts';
import { DomainError } from '../../core/errors.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { storeRef } from '../store/contract.ts';
import { usersRef } from '../users/contract.ts';
import { secretsRef } from '../auth/contract.ts';
import { chargebackPanel, paymentsSection } from './console.ts';
import { disputesSection } from './dispute-console.ts';
import { paymentsRef, paymentsSettings } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { GatewaySettings } from './gateway-settings.ts';
import { gatewaySettingsRoutes } from './gateway-routes.ts';
import { credentialsOf, gatewaysSection } from './gateway-console.ts';
import { liveGateway } from './live-gateways.ts';
import { paymentsRoutes } from './routes.ts';
import { taxSettings } from './tax.ts';
import { limitSettings } from './limits.ts';
import { taxRoutes } from './tax-routes.ts';
import { testGateway, testModeRoutes, testModeSettings } from './test-gateway.ts';
import { DbPaymentsService } from './service.ts';

const options = Type.Object({
  /** Not a secret: which PayPal (live or sandbox) the credentials belong to. */
  paypalApiBase: Type.String({ default: 'https://api-m.paypal.com', pattern: '^https?://' }),
  /** Not a secret: Stripe's API, or a stand-in speaking it (stripe-mock) to try checkouts without an account. */
  stripeApiBase: Type.String({ default: 'https://api.stripe.com', pattern: '^https?://[^/?#]+/?$' }),
  /** How long one call to PayPal may take before the checkout or webhook answers GATEWAY_ERROR. */
  paypalTimeoutMs: Type.Integer({ default: 10_000, minimum: 100 }),
  /** How long one try of a call to Stripe may take before it is given up (the checkout or webhook then answers GATEWAY_ERROR). */
  stripeTimeoutMs: Type.Integer({ default: 10_000, minimum: 100 }),
  /** Tries after a Stripe call that failed or timed out (the SDK makes retried calls idempotent); each may take stripeTimeoutMs. */
  stripeNetworkRetries: Type.Integer({ default: 0, minimum: 0, maximum: 5 }),
  /** Largest top-up without a package, in the site currency. */
  maxAmount: Type.Integer({ default: 1000, minimum: 1 }),
  /** A player without an account may buy directly with a gateway, under an in-game name. */
  guestCheckout: Type.Boolean({ default: true }),
  /** Minutes a direct purchase waits for its payment before it is `expired` (a later payment still completes it). */
  purchaseExpiryMinutes: Type.Integer({ default: 60, minimum: 1 }),
  /**
   * A checkout being created at its gateway holds its request's fingerprint for this long at most: a
   * copy of the request (a form posted twice) waits for it, and takes over after this if the
   * instance creating it died. Above the gateways' timeouts, retries included.
   */
  checkoutClaimSeconds: Type.Integer({ default: 90, minimum: 1 }),
  /**
   * A top-up charged back (refunded or disputed at its gateway) also refunds the balance purchases
   * the player made since it: what they bought with the money is taken back, its credits first cover the debt.
   */
  chargebackRefundsOrders: Type.Boolean({ default: false }),
  /** A dispute's block names the disputed account's sign-up address too, refusing checkouts from it (everyone behind a shared address). */
  blockAddresses: Type.Boolean({ default: false }),
  /**
   * The request header the owner's proxy or CDN sets to the country of the buyer's address
   * (Cloudflare's CF-IPCountry): recorded beside the billing country as tax evidence. Empty: none
   * (a header a client could set itself is no evidence; name one only behind such a proxy).
   */
  ipCountryHeader: Type.String({ default: '', maxLength: 64, pattern: '^[A-Za-z0-9-]*$' }),
  /** How often unpaid purchases are looked for. */
  expirySweepSeconds: Type.Integer({ default: 60, minimum: 1 }),
});

export default defineFeature({
  name: 'payments',
  requires: [usersRef, creditsRef, storeRef],
  options,
  entities,
  migrations,
  settings: { ...paymentsSettings, ...testModeSettings, ...taxSettings, ...limitSettings },
  events: {
    'payments.completed': 'A payment was completed at its gateway.',
    'payments.reversed': 'A payment was refunded or disputed (kind), its credits taken back.',
    'payments.dispute.opened': 'A payer disputed a payment at its gateway (a chargeback).',
    'payments.dispute.closed': 'A dispute was resolved: won (the money stays) or lost.',
    'payments.block.added': 'A player was blocked from paying at a gateway after a dispute.',
    'payments.block.lifted': 'A block was lifted, by staff or by the dispute being won.',
  },
  errors: {
    GATEWAY_UNAVAILABLE: 400,
    GATEWAY_ERROR: 502,
    INVALID_SIGNATURE: 400,
    INVALID_WEBHOOK: 400,
    UNKNOWN_PAYMENT: 400,
    AMOUNT_MISMATCH: 400,
    PACKAGE_NOT_FOUND: 404,
    PAYMENT_NOT_FOUND: 404,
    INVALID_CURRENCY: 400,
    INVALID_URL: 400,
    GUEST_CHECKOUT_DISABLED: 403,
    INVALID_GUEST_NAME: 400,
    PURCHASES_BLOCKED: 403,
    SPENDING_LIMIT: 403,
    BLOCK_NOT_FOUND: 404,
    DISPUTE_NOT_FOUND: 404,
    DISPUTE_CLOSED: 409,
    EVIDENCE_ALREADY_SUBMITTED: 409,
    EVIDENCE_NOT_SUPPORTED: 400,
    INVALID_GUEST_EMAIL: 400,
    TAX_RATE_NOT_FOUND: 404,
  },
  async register(app, { db, events, services, settings, env, log, options: opts }) {
    const payments = new DbPaymentsService({
      db,
      events,
      settings,
      log,
      users: services.get(usersRef),
      credits: services.get(creditsRef),
      store: services.get(storeRef),
      maxAmount: opts.maxAmount * 100,
      guestCheckout: opts.guestCheckout,
      purchaseExpirySeconds: opts.purchaseExpiryMinutes * 60,
      chargebackRefundsOrders: opts.chargebackRefundsOrders,
      checkoutClaimSeconds: opts.checkoutClaimSeconds,
      audit: services.get(auditRef),
      services,
      blockAddresses: opts.blockAddresses,
      ipCountryHeader: opts.ipCountryHeader.toLowerCase(),
    });
    const credentials = new GatewaySettings({
      env,
      apiBase: { stripe: opts.stripeApiBase, paypal: opts.paypalApiBase },
      settings,
      // Without the auth feature no key seals secrets: credentials then come from the environment only.
      secrets: services.find(secretsRef) ?? {
        enabled: false,
        seal: () => {
          throw new DomainError('SERVICE_UNAVAILABLE', 'Credentials set in the console need the auth feature (its key seals them).');
        },
        open: () => '',
      },
      db,
      audit: services.get(auditRef),
    });
    const live = { stripe: { timeoutMs: opts.stripeTimeoutMs, networkRetries: opts.stripeNetworkRetries }, paypal: { timeoutMs: opts.paypalTimeoutMs } };
    for (const name of ['stripe', 'paypal'] as const) {
      payments.registerGateway(liveGateway(name, credentials, live));
      const unset = credentials.missing(name);
      if (unset.length) log.info({ gateway: name }, `payment gateway ${name} is off until set in the console: ${unset.join(', ')} not set`);
    }
    payments.registerGateway(testGateway());
    services.provide(paymentsRef, payments);
    services.get(usersRef).addPlayerPanel(chargebackPanel(payments, settings));
    await paymentsRoutes(app, payments, settings);
    taxRoutes(app, db, payments.taxRates, settings);
    testModeRoutes(app, payments);
    const checkMs = Math.max(opts.stripeTimeoutMs, opts.paypalTimeoutMs);
    gatewaySettingsRoutes(app, credentials, checkMs);
    credentialsOf.set(payments, { credentials, timeoutMs: checkMs });

    let sweeper: NodeJS.Timeout | undefined;
    app.addHook('onReady', async () => {
      sweeper = setInterval(() => {
        payments.expirePending().catch((err: unknown) => log.error({ err }, 'payments: expiring unpaid purchases failed'));
        payments.forgetCheckouts().catch((err: unknown) => log.error({ err }, 'payments: forgetting past checkouts failed'));
      }, opts.expirySweepSeconds * 1000);
      sweeper.unref();
    });
    app.addHook('preClose', async () => clearInterval(sweeper));
    return payments;
  },
  console: [paymentsSection, disputesSection, gatewaysSection],
});
