/** The payments tests' set-up: an app with the gateways' secrets, mocked gateways, signed webhooks. */
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import Stripe from 'stripe';
import type { Test } from 'tap';
import { build, call } from '../../../test/helper.ts';

export const STRIPE_ENV = { STRIPE_SECRET_KEY: 'sk_test_payments', STRIPE_WEBHOOK_SECRET: 'whsec_payments' };
export const PAYPAL_ENV = { PAYPAL_CLIENT_ID: 'paypal-client', PAYPAL_CLIENT_SECRET: 'paypal-secret', PAYPAL_WEBHOOK_ID: 'WH-1' };
export const PAYPAL_API = 'https://api-m.sandbox.paypal.com';
const FEATURES = ['users', 'credits', 'store', 'donations', 'payments'];

/** No request leaves the process; a request no mock answers fails its test. */
export function offline(t: Test): void {
  nock.disableNetConnect();
  t.afterEach(() => nock.cleanAll());
  t.teardown(() => nock.enableNetConnect());
}

export function buildPayments(t: Test, env: Record<string, string> = { ...STRIPE_ENV, ...PAYPAL_ENV }, payments: Record<string, unknown> = {}): Promise<FastifyInstance> {
  return build(t, { features: FEATURES, env, config: { plugins: { payments: { paypalApiBase: PAYPAL_API, ...payments } } } });
}

/** With the delivery feature too: a direct purchase's commands are queued. */
export function buildShop(t: Test, payments: Record<string, unknown> = {}): Promise<FastifyInstance> {
  return build(t, {
    features: [...FEATURES, 'delivery'], env: { ...STRIPE_ENV, ...PAYPAL_ENV },
    config: { plugins: { payments: { paypalApiBase: PAYPAL_API, ...payments } } },
  });
}

const stripe = new Stripe('sk_test_signer');

/** Stripe's answer to a Checkout Session create. */
export function mockStripeSession(sessionId: string, asked?: (body: string) => void): nock.Scope {
  return nock('https://api.stripe.com').post('/v1/checkout/sessions', (body) => {
    asked?.(new URLSearchParams(body as string).toString());
    return true;
  }).reply(200, { id: sessionId, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${sessionId}` });
}

/** Posts a Stripe event signed the way Stripe signs (or with another secret). */
export function stripeWebhook(app: FastifyInstance, event: Record<string, unknown>, secret = STRIPE_ENV.STRIPE_WEBHOOK_SECRET) {
  const payload = JSON.stringify({ object: 'event', api_version: '2025-01-01', ...event });
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret });
  return app.inject({
    method: 'POST', url: '/api/payments/webhooks/stripe', payload,
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
  });
}

export const sessionCompleted = (eventId: string, paymentId: string, sessionId: string, amount: number, currency = 'usd') => ({
  id: eventId, type: 'checkout.session.completed',
  data: {
    object: {
      id: sessionId, object: 'checkout.session', client_reference_id: paymentId, payment_status: 'paid', amount_total: amount,
      currency, payment_intent: `pi_${sessionId}`, metadata: { paymentID: paymentId },
    },
  },
});

export const chargeRefunded = (eventId: string, sessionId: string, amount: number, refunded = amount) => ({
  id: eventId, type: 'charge.refunded',
  data: {
    object: {
      id: `ch_${sessionId}`, object: 'charge', amount, amount_refunded: refunded, refunded: refunded === amount, payment_intent: `pi_${sessionId}`,
      metadata: {} as Record<string, string>,
    },
  },
});

export const disputeCreated = (eventId: string, sessionId: string, amount: number) => ({
  id: eventId, type: 'charge.dispute.created',
  data: { object: { id: `dp_${sessionId}`, object: 'dispute', amount, charge: `ch_${sessionId}`, payment_intent: `pi_${sessionId}` } },
});

/** A Stripe checkout for `body`, answered by a mocked session; returns the payment id. */
export async function stripeCheckout(app: FastifyInstance, sessionId: string, body: Record<string, unknown>): Promise<string> {
  mockStripeSession(sessionId);
  const res = await call(app, '/api/payments/checkout', {
    body: { gateway: 'stripe', returnURL: 'https://play.example.com/thanks', cancelURL: 'https://play.example.com/shop', ...body },
  });
  if (res.statusCode !== 200) throw new Error(`checkout answered ${res.statusCode}: ${res.body}`);
  return res.json().data.paymentID as string;
}

/** A user's balance, through the API (a number: 12.5). */
export async function balanceOf(app: FastifyInstance, username: string): Promise<number> {
  const res = await call(app, `/api/credits?username=${username}`);
  if (res.statusCode !== 200) throw new Error(`balance answered ${res.statusCode}: ${res.body}`);
  return res.json().raw_credits as number;
}

const PAYPAL_HEADERS = {
  'paypal-auth-algo': 'SHA256withRSA', 'paypal-cert-url': 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1',
  'paypal-transmission-id': 'tx-1', 'paypal-transmission-sig': 'c2lnbmF0dXJl', 'paypal-transmission-time': '2026-11-23T08:00:00Z',
};

/** PayPal's OAuth token, asked once per app (it is cached until it expires). */
export function mockPayPalToken(): nock.Scope {
  return nock(PAYPAL_API).post('/v1/oauth2/token', 'grant_type=client_credentials')
    .basicAuth({ user: PAYPAL_ENV.PAYPAL_CLIENT_ID, pass: PAYPAL_ENV.PAYPAL_CLIENT_SECRET })
    .reply(200, { access_token: 'A21-token', token_type: 'Bearer', expires_in: 32400 });
}

/** PayPal's answer to the verify-webhook-signature call for the next webhook. */
export function mockPayPalVerify(status: 'SUCCESS' | 'FAILURE', seen?: (body: Record<string, unknown>) => void): nock.Scope {
  return nock(PAYPAL_API, { reqheaders: { authorization: 'Bearer A21-token' } })
    .post('/v1/notifications/verify-webhook-signature', (body: Record<string, unknown>) => { seen?.(body); return true; })
    .reply(200, { verification_status: status });
}

/** Posts a PayPal webhook (an event, or the JSON text as PayPal wrote it) with PayPal's transmission headers (or without them). */
export function paypalWebhook(app: FastifyInstance, event: Record<string, unknown> | string, headers: Record<string, string> = PAYPAL_HEADERS) {
  return app.inject({
    method: 'POST', url: '/api/payments/webhooks/paypal', payload: typeof event === 'string' ? event : JSON.stringify(event),
    headers: { 'content-type': 'application/json', ...headers },
  });
}
