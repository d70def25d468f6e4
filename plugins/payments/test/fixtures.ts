/** The payments tests' set-up: an app with the gateways' secrets, mocked gateways, signed webhooks. */
import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { build, call } from '../../../test/helper.ts';
import { PAYPAL_API, PAYPAL_ENV, STRIPE_ENV, mockStripeSession, sessionCompleted } from '../../../test/gateways.ts';

export {
  offline,
  STRIPE_ENV,
  PAYPAL_ENV,
  PAYPAL_API,
  mockStripeSession,
  stripeWebhook,
  sessionCompleted,
  mockPayPalToken,
  mockPayPalVerify,
  paypalWebhook,
} from '../../../test/gateways.ts';

const FEATURES = ['users', 'credits', 'store', 'donations', 'payments'];

export function buildPayments(
  t: Test,
  env: Record<string, string> = { ...STRIPE_ENV, ...PAYPAL_ENV },
  payments: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  return build(t, { features: FEATURES, env, config: { plugins: { payments: { paypalApiBase: PAYPAL_API, ...payments } } } });
}

/** With the delivery feature too: a direct purchase's commands are queued. */
export function buildShop(t: Test, payments: Record<string, unknown> = {}): Promise<FastifyInstance> {
  return build(t, {
    features: [...FEATURES, 'delivery'],
    env: { ...STRIPE_ENV, ...PAYPAL_ENV },
    config: { plugins: { payments: { paypalApiBase: PAYPAL_API, ...payments } } },
  });
}

export const chargeRefunded = (eventId: string, sessionId: string, amount: number, refunded = amount) => ({
  id: eventId,
  type: 'charge.refunded',
  data: {
    object: {
      id: `ch_${sessionId}`,
      object: 'charge',
      amount,
      amount_refunded: refunded,
      refunded: refunded === amount,
      payment_intent: `pi_${sessionId}`,
      metadata: {} as Record<string, string>,
    },
  },
});

export const disputeCreated = (eventId: string, sessionId: string, amount: number) => ({
  id: eventId,
  type: 'charge.dispute.created',
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

/** Stripe's completion of a session that computed `tax` for a buyer in `country`. */
export const taxedSession = (eventId: string, paymentID: string, sessionId: string, subtotal: number, tax: number, inclusive: boolean, country: string) => {
  const event = sessionCompleted(eventId, paymentID, sessionId, inclusive ? subtotal : subtotal + tax, 'eur');
  Object.assign(event.data.object, {
    amount_subtotal: subtotal,
    automatic_tax: { enabled: true, status: 'complete' },
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: tax },
    customer_details: { address: { country } },
  });
  return event;
};
