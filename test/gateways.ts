/**
 * The payment gateways as tests meet them: Stripe's and PayPal's API answers mocked with nock, and
 * their webhooks signed (Stripe, with its SDK's test helper) or carrying PayPal's transmission
 * headers. Shared by the payments feature's tests and the storefront's.
 */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import Stripe from 'stripe';
import type { TestLike } from './helper.ts';

export const STRIPE_ENV = { STRIPE_SECRET_KEY: 'sk_test_payments', STRIPE_WEBHOOK_SECRET: 'whsec_payments' };
export const PAYPAL_ENV = { PAYPAL_CLIENT_ID: 'paypal-client', PAYPAL_CLIENT_SECRET: 'paypal-secret', PAYPAL_WEBHOOK_ID: 'WH-1' };
export const PAYPAL_API = 'https://api-m.sandbox.paypal.com';

const stripe = new Stripe('sk_test_signer');

/** Stripe's answer to a Checkout Session create. */
export function mockStripeSession(sessionId: string, asked?: (body: string) => void): nock.Scope {
  return nock('https://api.stripe.com')
    .post('/v1/checkout/sessions', (body) => {
      asked?.(new URLSearchParams(body as string).toString());
      return true;
    })
    .reply(200, { id: sessionId, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${sessionId}` });
}

/** Posts a Stripe event signed the way Stripe signs (or with another secret). */
export function stripeWebhook(app: FastifyInstance, event: Record<string, unknown>, secret = STRIPE_ENV.STRIPE_WEBHOOK_SECRET) {
  const payload = JSON.stringify({ object: 'event', api_version: '2025-01-01', ...event });
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret });
  return app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/stripe',
    payload,
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
  });
}

export const sessionCompleted = (eventId: string, paymentId: string, sessionId: string, amount: number, currency = 'usd') => ({
  id: eventId,
  type: 'checkout.session.completed',
  data: {
    object: {
      id: sessionId,
      object: 'checkout.session',
      client_reference_id: paymentId,
      payment_status: 'paid',
      amount_total: amount,
      currency,
      payment_intent: `pi_${sessionId}`,
      metadata: { paymentID: paymentId },
    },
  },
});

const PAYPAL_HEADERS = {
  'paypal-auth-algo': 'SHA256withRSA',
  'paypal-cert-url': 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1',
  'paypal-transmission-id': 'tx-1',
  'paypal-transmission-sig': 'c2lnbmF0dXJl',
  'paypal-transmission-time': '2026-11-23T08:00:00Z',
};

/** PayPal's OAuth token, asked once per app (it is cached until it expires). */
export function mockPayPalToken(): nock.Scope {
  return nock(PAYPAL_API)
    .post('/v1/oauth2/token', 'grant_type=client_credentials')
    .basicAuth({ user: PAYPAL_ENV.PAYPAL_CLIENT_ID, pass: PAYPAL_ENV.PAYPAL_CLIENT_SECRET })
    .reply(200, { access_token: 'A21-token', token_type: 'Bearer', expires_in: 32400 });
}

/** PayPal's answer to the verify-webhook-signature call for the next webhook. */
export function mockPayPalVerify(status: 'SUCCESS' | 'FAILURE', seen?: (body: Record<string, unknown>) => void): nock.Scope {
  return nock(PAYPAL_API, { reqheaders: { authorization: 'Bearer A21-token' } })
    .post('/v1/notifications/verify-webhook-signature', (body: Record<string, unknown>) => {
      seen?.(body);
      return true;
    })
    .reply(200, { verification_status: status });
}

/** Posts a PayPal webhook (an event, or the JSON text as PayPal wrote it) with PayPal's transmission headers (or without them). */
export function paypalWebhook(app: FastifyInstance, event: Record<string, unknown> | string, headers: Record<string, string> = PAYPAL_HEADERS) {
  return app.inject({
    method: 'POST',
    url: '/api/payments/webhooks/paypal',
    payload: typeof event === 'string' ? event : JSON.stringify(event),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/**
 * No request leaves the process while the test runs (a browser test still reaches its own server
 * on 127.0.0.1); each subtest's unused mocks are dropped after it.
 */
export function offline(t: TestLike & { afterEach(fn: () => void): void }, local = false): void {
  nock.disableNetConnect();
  if (local) nock.enableNetConnect('127.0.0.1');
  t.teardown(() => nock.enableNetConnect());
  t.afterEach(() => nock.cleanAll());
}

/** Both gateways configured. */
export const GATEWAY_ENV = { ...STRIPE_ENV, ...PAYPAL_ENV };
