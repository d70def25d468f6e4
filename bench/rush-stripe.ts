/**
 * Stripe's API as the rush meets it (bench/rush.ts): a stand-in on 127.0.0.1 that answers a
 * Checkout Session create as Stripe does (an id and the address to send the player to), for the
 * server and the baseline alike, and the secrets both are given. The load generator then plays
 * Stripe's `checkout.session.completed` webhook for the session (bench/rush-load.ts), signed with
 * `WEBHOOK_SECRET` the way Stripe signs: `t=<seconds>,v1=<HMAC-SHA256 of "t.payload">`.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const STRIPE_SECRETS = { STRIPE_SECRET_KEY: 'sk_test_rush', STRIPE_WEBHOOK_SECRET: 'whsec_rush' };

export interface StripeStandIn {
  url: string;
  /** Checkout Sessions created so far. */
  sessions(): number;
  close(): Promise<void>;
}

export async function startStripe(): Promise<StripeStandIn> {
  let sessions = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
        const id = `cs_rush_${++sessions}`;
        res.end(JSON.stringify({ id, object: 'checkout.session', mode: 'payment', url: `https://checkout.stripe.com/c/pay/${id}` }));
        return;
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${req.url})` } }));
    });
  });
  // Kept-alive calls from the server and the baseline, as they would be to api.stripe.com.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sessions: () => sessions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Stripe's event that a Checkout Session in subscription mode was paid: subscription `subscriptionId` starts, its first period `amount` cents. */
export function subscriptionStarted(eventId: string, sessionId: string, reference: string, subscriptionId: string, amount: number, currency: string): string {
  return sessionEvent(eventId, sessionId, {
    mode: 'subscription',
    client_reference_id: reference,
    subscription: subscriptionId,
    payment_status: 'paid',
    amount_total: amount,
    amount_subtotal: amount,
    currency,
    metadata: { subscriptionReference: reference },
  });
}

/** Stripe's `checkout.session.completed` event of Checkout Session `sessionId`, with the session's fields. */
function sessionEvent(eventId: string, sessionId: string, session: Record<string, unknown>): string {
  return JSON.stringify({
    id: eventId,
    object: 'event',
    api_version: '2025-01-01',
    type: 'checkout.session.completed',
    data: { object: { id: sessionId, object: 'checkout.session', ...session } },
  });
}

/** The Stripe-Signature header of `payload` at `seconds` (Stripe's scheme, as its SDK's test helper makes it). */
export function stripeSignature(payload: string, secret: string, seconds = Math.floor(Date.now() / 1000)): string {
  return `t=${seconds},v1=${createHmac('sha256', secret).update(`${seconds}.${payload}`).digest('hex')}`;
}

/**
 * Stripe's event that a Checkout Session was paid: `amount` in cents before tax, in `currency` (lower
 * case, as Stripe writes it); with `tax`, Stripe Tax computed it for the buyer's country and added it.
 */
export function sessionCompleted(
  eventId: string,
  sessionId: string,
  paymentId: string,
  amount: number,
  currency: string,
  tax?: { amount: number; country: string },
): string {
  return sessionEvent(eventId, sessionId, {
    mode: 'payment',
    client_reference_id: paymentId,
    payment_status: 'paid',
    amount_total: amount + (tax?.amount ?? 0),
    amount_subtotal: amount,
    currency,
    ...(tax ? { automatic_tax: { enabled: true }, total_details: { amount_tax: tax.amount }, customer_details: { address: { country: tax.country } } } : {}),
    payment_intent: `pi_${sessionId.slice(3)}`,
    metadata: { paymentID: paymentId },
  });
}
