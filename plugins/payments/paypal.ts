/**
 * PayPal over its REST API: an OAuth client-credentials token, Orders v2 (create, then capture
 * when the buyer approved), and webhooks verified by PayPal's verify-webhook-signature call.
 */
import { DomainError } from '../../core/errors.ts';
import { formatMoney, parseMoney } from '../../core/format.ts';
import type { DisputeFacts, GatewayAdapter, GatewayEvent } from './contract.ts';
import { cancelPayPalSubscription, createPayPalSubscription, readPayPalBillingEvent } from './paypal-billing.ts';

export interface PayPalSecrets {
  clientId: string;
  clientSecret: string;
  /** The id PayPal gave the webhook endpoint: verification is bound to it. */
  webhookId: string;
  /** `https://api-m.paypal.com`, or `https://api-m.sandbox.paypal.com` to test. */
  apiBase: string;
}

interface Money {
  currency_code: string;
  value: string;
}
interface Capture {
  id: string;
  status?: string;
  amount?: Money;
  custom_id?: string;
  supplementary_data?: { related_ids?: { order_id?: string } };
}
interface PayPalWebhook {
  id?: unknown;
  event_type?: unknown;
  resource?: Record<string, unknown>;
}

const VERIFY_HEADERS = ['paypal-auth-algo', 'paypal-cert-url', 'paypal-transmission-id', 'paypal-transmission-sig', 'paypal-transmission-time'] as const;

/** `"12.50"` in `currency` → cents; the webhook is unreadable otherwise. */
function centsOf(money: Money | undefined, what: string): { amount: number; currency: string } {
  const amount = parseMoney(money?.value);
  if (amount === undefined || !money?.currency_code) throw new DomainError('INVALID_WEBHOOK', `${what} has no readable amount.`);
  return { amount, currency: money.currency_code };
}

export interface PayPalOptions {
  /** How long one call to PayPal may take, its answer's body included, before it is given up. */
  timeoutMs: number;
}

export function paypalGateway(secrets: PayPalSecrets, { timeoutMs }: PayPalOptions): GatewayAdapter {
  let token: { value: string; expires: number } | undefined;

  /** Every call to PayPal: a PayPal that does not answer must not hold a player's request (or a worker) forever. */
  function call(path: string, init: RequestInit): Promise<Response> {
    return fetch(`${secrets.apiBase.replace(/\/+$/, '')}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  }

  /** A JSON call with the OAuth token; a Buffer body is sent as it is (it is JSON text already). */
  async function api<T>(method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<{ status: number; body: T }> {
    const res = await call(path, {
      method,
      headers: { authorization: `Bearer ${await accessToken()}`, 'content-type': 'application/json', ...extraHeaders },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
    // Some answers have no body (a subscription's cancel is 204 No Content).
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
  }

  async function accessToken(): Promise<string> {
    if (token && token.expires > Date.now()) return token.value;
    const res = await call('/v1/oauth2/token', {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${secrets.clientId}:${secrets.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    if (!res.ok) throw new Error(`PayPal refused the OAuth token (HTTP ${res.status}).`);
    const answer = (await res.json()) as { access_token: string; expires_in: number };
    // A minute early, so a token never expires between the check and PayPal reading it.
    token = { value: answer.access_token, expires: Date.now() + (answer.expires_in - 60) * 1000 };
    return token.value;
  }

  /** The approved order is captured here; PayPal's idempotency key makes a redelivered approval capture once. */
  async function capture(eventId: string, orderId: string): Promise<GatewayEvent> {
    const res = await api<{ status?: string; purchase_units?: { custom_id?: string; payments?: { captures?: Capture[] } }[]; details?: { issue?: string }[] }>(
      'POST',
      `/v2/checkout/orders/${encodeURIComponent(orderId)}/capture`,
      {},
      { 'paypal-request-id': `capture-${orderId}` },
    );
    // Captured before (by an earlier delivery): PAYMENT.CAPTURE.COMPLETED completes the payment.
    if (res.status === 422 && res.body.details?.some((d) => d.issue === 'ORDER_ALREADY_CAPTURED')) return { eventId, kind: 'ignored' };
    if (res.status >= 300) throw new Error(`PayPal refused to capture order ${orderId} (HTTP ${res.status}).`);
    const unit = res.body.purchase_units?.[0];
    const captured = unit?.payments?.captures?.[0];
    if (res.body.status !== 'COMPLETED' || !captured || captured.status !== 'COMPLETED') return { eventId, kind: 'ignored' };
    return {
      eventId,
      kind: 'completed',
      paymentId: unit?.custom_id,
      checkoutRef: orderId,
      chargeRef: captured.id,
      ...centsOf(captured.amount, `Capture ${captured.id}`),
    };
  }

  return {
    name: 'paypal',

    async createCheckout(request) {
      const res = await api<{ id?: string; links?: { rel: string; href: string }[] }>(
        'POST',
        '/v2/checkout/orders',
        {
          intent: 'CAPTURE',
          purchase_units: [
            {
              custom_id: request.paymentId,
              description: request.description.slice(0, 127),
              amount: {
                currency_code: request.currency,
                value: formatMoney(request.amount),
                // The owner's tax shown apart on PayPal's page: the total is the goods and the tax.
                ...(request.taxAmount
                  ? {
                      breakdown: {
                        item_total: { currency_code: request.currency, value: formatMoney(request.amount - request.taxAmount) },
                        tax_total: { currency_code: request.currency, value: formatMoney(request.taxAmount) },
                      },
                    }
                  : {}),
              },
            },
          ],
          payment_source: { paypal: { experience_context: { return_url: request.returnURL, cancel_url: request.cancelURL, user_action: 'PAY_NOW' } } },
        },
        { 'paypal-request-id': `order-${request.paymentId}` },
      );
      const approve = res.body.links?.find((l) => l.rel === 'payer-action' || l.rel === 'approve');
      if (res.status >= 300 || !res.body.id || !approve) throw new Error(`PayPal refused the order (HTTP ${res.status}).`);
      return { checkoutRef: res.body.id, checkoutURL: approve.href };
    },

    createSubscriptionCheckout: (request) => createPayPalSubscription(api, request),
    cancelSubscription: ({ subscriptionRef }) => cancelPayPalSubscription(api, subscriptionRef),

    async parseWebhook({ rawBody, headers }) {
      const transmission: Record<string, string> = {};
      for (const name of VERIFY_HEADERS) {
        const value = headers[name];
        if (typeof value !== 'string') throw new DomainError('INVALID_SIGNATURE', `The ${name} header is missing.`);
        transmission[name] = value;
      }
      let webhook: PayPalWebhook;
      try {
        webhook = JSON.parse(rawBody.toString('utf8')) as PayPalWebhook;
      } catch {
        throw new DomainError('INVALID_SIGNATURE', 'The body is not the JSON PayPal signs.');
      }
      const verdict = await api<{ verification_status?: string }>(
        'POST',
        '/v1/notifications/verify-webhook-signature',
        verificationBody(
          {
            auth_algo: transmission['paypal-auth-algo'],
            cert_url: transmission['paypal-cert-url'],
            transmission_id: transmission['paypal-transmission-id'],
            transmission_sig: transmission['paypal-transmission-sig'],
            transmission_time: transmission['paypal-transmission-time'],
            webhook_id: secrets.webhookId,
          },
          rawBody,
        ),
      );
      if (verdict.status >= 300) throw new Error(`PayPal could not verify the webhook (HTTP ${verdict.status}).`);
      if (verdict.body.verification_status !== 'SUCCESS') throw new DomainError('INVALID_SIGNATURE', 'PayPal did not confirm the webhook signature.');
      if (typeof webhook.id !== 'string' || typeof webhook.event_type !== 'string' || !webhook.resource) {
        throw new DomainError('INVALID_WEBHOOK', 'The webhook has no id, event_type or resource.');
      }
      return readEvent(webhook.id, webhook.event_type, webhook.resource, capture);
    },

    async refund({ paymentId, chargeRef }) {
      // No amount: the whole capture. PayPal-Request-Id makes a retried refund the same one.
      const res = await api<{ details?: { issue?: string }[] }>(
        'POST',
        `/v2/payments/captures/${encodeURIComponent(chargeRef)}/refund`,
        {},
        { 'paypal-request-id': `refund-${paymentId}` },
      );
      if (res.status === 422 && res.body.details?.some((d) => d.issue === 'CAPTURE_FULLY_REFUNDED')) return;
      if (res.status >= 300) throw new Error(`PayPal refused to refund capture ${chargeRef} (HTTP ${res.status}).`);
    },
  };
}

/**
 * PayPal checks its signature over the event exactly as it sent it: `webhook_event` carries the
 * received bytes, spliced into the JSON text, never a re-serialised copy (key order, spacing and
 * escapes would differ). The caller has parsed `rawBody` as JSON already.
 */
function verificationBody(fields: Record<string, string | undefined>, rawBody: Buffer): Buffer {
  const head = JSON.stringify(fields).slice(0, -1);
  return Buffer.concat([Buffer.from(`${head},"webhook_event":`), rawBody, Buffer.from('}')]);
}

function disputeFacts(resource: Record<string, unknown>): DisputeFacts {
  const money = resource.dispute_amount as Money | undefined;
  const amount = parseMoney(money?.value);
  return {
    ref: typeof resource.dispute_id === 'string' ? resource.dispute_id : undefined,
    reason: typeof resource.reason === 'string' ? resource.reason : undefined,
    amount,
    currency: amount === undefined ? undefined : money?.currency_code,
  };
}

/** The capture (or refund, reversal) a resource's `up` link points at. */
function upCapture(resource: Record<string, unknown>): string | undefined {
  const links = resource.links as { rel?: string; href?: string }[] | undefined;
  const up = links?.find((l) => l.rel === 'up' && l.href?.includes('/captures/'));
  return up?.href?.split('/captures/')[1]?.split(/[/?]/)[0];
}

async function readEvent(
  eventId: string,
  type: string,
  resource: Record<string, unknown>,
  capture: (eventId: string, orderId: string) => Promise<GatewayEvent>,
): Promise<GatewayEvent> {
  switch (type) {
    case 'CHECKOUT.ORDER.APPROVED':
      if (typeof resource.id !== 'string') throw new DomainError('INVALID_WEBHOOK', 'The approved order has no id.');
      return capture(eventId, resource.id);
    case 'PAYMENT.CAPTURE.COMPLETED': {
      const c = resource as unknown as Capture;
      return {
        eventId,
        kind: 'completed',
        paymentId: c.custom_id,
        checkoutRef: c.supplementary_data?.related_ids?.order_id,
        chargeRef: c.id,
        ...centsOf(c.amount, `Capture ${c.id}`),
      };
    }
    case 'PAYMENT.CAPTURE.REFUNDED': {
      const breakdown = resource.seller_payable_breakdown as { total_refunded_amount?: Money } | undefined;
      const total = breakdown?.total_refunded_amount ? centsOf(breakdown.total_refunded_amount, `Refund ${String(resource.id)}`).amount : undefined;
      return { eventId, kind: 'refunded', chargeRef: upCapture(resource), refundedTotal: total };
    }
    case 'PAYMENT.CAPTURE.REVERSED':
      return { eventId, kind: 'disputed', chargeRef: upCapture(resource) };
    case 'CUSTOMER.DISPUTE.CREATED': {
      const disputed = resource.disputed_transactions as { seller_transaction_id?: string }[] | undefined;
      return { eventId, kind: 'disputed', chargeRef: disputed?.[0]?.seller_transaction_id, dispute: disputeFacts(resource) };
    }
    case 'CUSTOMER.DISPUTE.RESOLVED': {
      const disputed = resource.disputed_transactions as { seller_transaction_id?: string }[] | undefined;
      const outcome = (resource.dispute_outcome as { outcome_code?: string } | undefined)?.outcome_code;
      // Lost when the payer got the money (their favour, or the seller accepted the claim); PayPal paying out itself,
      // the seller's favour or the payer's withdrawal leave it with the seller.
      const kind = outcome === 'RESOLVED_BUYER_FAVOUR' || outcome === 'ACCEPTED' ? 'dispute-lost' : 'dispute-won';
      return { eventId, kind, chargeRef: disputed?.[0]?.seller_transaction_id, dispute: disputeFacts(resource) };
    }
    default:
      return readPayPalBillingEvent(eventId, type, resource) ?? { eventId, kind: 'ignored' };
  }
}
