/**
 * A third-party payment gateway. The payments feature owns checkouts, webhooks and the exactly-once
 * bookkeeping; a gateway only creates checkouts and reads its own signed webhooks (the
 * GatewayAdapter of plugins/payments/contract.ts), and registers itself through the contract.
 *
 * "ExamplePay" is imaginary: its pay page takes the payment id and amount in the URL, and it posts
 * `{id, type, paymentID, amount, currency}` (amount in cents) signed with HMAC-SHA256 over the raw
 * body in `X-ExamplePay-Signature`. Its secret comes from the environment: EXAMPLEPAY_SECRET.
 * Enable it in config: "plugins": { "examplepay": { "enabled": true, "package": "community-plugin-examplepay" } }
 * Everything it imports comes from @community-platform/sdk, the host's own objects at run time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { defineFeature, paymentsRef, Type, type Payments } from '@community-platform/sdk';

const options = Type.Object({
  payURL: Type.String({ default: 'https://pay.example.com/checkout', pattern: '^https?://' }),
});

/** A refusal the payments feature answers with a 400 of this code (GatewayAdapter.parseWebhook). */
const refusal = (code: 'INVALID_SIGNATURE' | 'INVALID_WEBHOOK', message: string) => Object.assign(new Error(message), { code });

const KINDS: Record<string, Payments.GatewayEvent['kind']> = {
  'payment.succeeded': 'completed',
  'payment.refunded': 'refunded',
  'payment.disputed': 'disputed',
};

function examplePay(secret: string, payURL: string): Payments.GatewayAdapter {
  return {
    name: 'examplepay',
    async createCheckout({ paymentId, amount, currency, returnURL, cancelURL }) {
      const url = new URL(payURL);
      for (const [k, v] of Object.entries({ payment: paymentId, amount: String(amount), currency, return: returnURL, cancel: cancelURL }))
        url.searchParams.set(k, v);
      return { checkoutRef: `ep_${paymentId}`, checkoutURL: url.toString() };
    },
    async parseWebhook({ rawBody, headers }) {
      const sent = headers['x-examplepay-signature'];
      const expected = createHmac('sha256', secret).update(rawBody).digest();
      const given = typeof sent === 'string' && /^[0-9a-f]{64}$/.test(sent) ? Buffer.from(sent, 'hex') : undefined;
      if (!given || !timingSafeEqual(given, expected)) throw refusal('INVALID_SIGNATURE', 'The X-ExamplePay-Signature header does not match the body.');
      let event: { id?: unknown; type?: unknown; paymentID?: unknown; amount?: unknown; currency?: unknown };
      try {
        event = JSON.parse(rawBody.toString('utf8')) as typeof event;
      } catch {
        throw refusal('INVALID_WEBHOOK', 'The event is not JSON.');
      }
      if (typeof event.id !== 'string' || typeof event.paymentID !== 'string') throw refusal('INVALID_WEBHOOK', 'The event has no id or paymentID.');
      const kind = typeof event.type === 'string' ? KINDS[event.type] : undefined;
      if (kind === 'completed') {
        if (!Number.isSafeInteger(event.amount) || typeof event.currency !== 'string') throw refusal('INVALID_WEBHOOK', 'The payment has no amount.');
        return { eventId: event.id, kind, paymentId: event.paymentID, amount: event.amount as number, currency: event.currency };
      }
      if (kind === 'refunded' || kind === 'disputed') return { eventId: event.id, kind, paymentId: event.paymentID };
      return { eventId: event.id, kind: 'ignored' };
    },
  };
}

export default defineFeature({
  name: 'examplepay',
  requires: [paymentsRef],
  options,
  async register(_app, { services, env, log, options: opts }) {
    if (!env.EXAMPLEPAY_SECRET) {
      log.info('payment gateway examplepay disabled: EXAMPLEPAY_SECRET not set');
      return;
    }
    services.get(paymentsRef).registerGateway(examplePay(env.EXAMPLEPAY_SECRET, opts.payURL));
  },
});
