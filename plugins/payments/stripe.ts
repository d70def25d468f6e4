/**
 * Stripe: Checkout Sessions through the official SDK; webhooks verified with the SDK's signature
 * check over the raw body (`Stripe-Signature`, the endpoint's signing secret).
 */
import Stripe from 'stripe';
import { DomainError } from '../../core/errors.ts';
import type { DisputeFacts, GatewayAdapter, GatewayEvent } from './contract.ts';
import { cancelSubscription, changeSubscription, createSubscriptionCheckout, readBillingEvent, sessionStarted } from './stripe-billing.ts';

export interface StripeSecrets {
  secretKey: string;
  webhookSecret: string;
}

/** A payment intent or charge field: an id, or the object itself when expanded. */
const idOf = (value: string | { id: string } | null | undefined): string | undefined => (typeof value === 'string' ? value : value?.id);

export interface StripeOptions {
  /** How long one try of a call to Stripe may take, its answer's body included, before it is given up. */
  timeoutMs: number;
  /** Tries after a failed one (no answer, a conflict, a 5xx); a call waits at most timeoutMs × (1 + these). */
  networkRetries: number;
  /** Where Stripe's API is: `https://api.stripe.com`, or a stand-in such as stripe-mock (`http://localhost:12111`). */
  apiBase: string;
}

/** The SDK takes the API's address as protocol, host and port. */
function addressOf(apiBase: string): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(apiBase);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { protocol, host: url.hostname, port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443 };
}

export function stripeGateway({ secretKey, webhookSecret }: StripeSecrets, { timeoutMs, networkRetries, apiBase }: StripeOptions): GatewayAdapter {
  // The SDK's own defaults (80 s, 2 retries) would hold a player's checkout for minutes when Stripe stalls.
  const stripe = new Stripe(secretKey, { timeout: timeoutMs, maxNetworkRetries: networkRetries, ...addressOf(apiBase) });
  return {
    name: 'stripe',
    computesTax: true,

    async createCheckout(request) {
      const session = await stripe.checkout.sessions.create({
        mode: 'payment',
        line_items: [
          {
            quantity: 1,
            price_data: {
              currency: request.currency.toLowerCase(),
              unit_amount: request.amount,
              product_data: { name: request.description },
              ...(request.tax ? { tax_behavior: request.tax } : {}),
            },
          },
        ],
        // Stripe Tax needs the buyer's address: the country decides the rate.
        ...(request.tax ? { automatic_tax: { enabled: true }, billing_address_collection: 'required' as const } : {}),
        ...(request.threeDSecure ? { payment_method_options: { card: { request_three_d_secure: 'any' as const } } } : {}),
        success_url: request.returnURL,
        cancel_url: request.cancelURL,
        client_reference_id: request.paymentId,
        metadata: { paymentID: request.paymentId },
        // Copied onto the charge, so a refund or dispute names the payment even if it beats the completion here.
        payment_intent_data: { metadata: { paymentID: request.paymentId } },
      });
      if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a URL.`);
      return { checkoutRef: session.id, checkoutURL: session.url };
    },

    createSubscriptionCheckout: (request) => createSubscriptionCheckout(stripe, request),
    cancelSubscription: (request) => cancelSubscription(stripe, request),
    changeSubscription: (request) => changeSubscription(stripe, request),

    async parseWebhook({ rawBody, headers }) {
      const signature = headers['stripe-signature'];
      if (typeof signature !== 'string') throw new DomainError('INVALID_SIGNATURE', 'The Stripe-Signature header is missing.');
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret);
      } catch (err) {
        throw new DomainError('INVALID_SIGNATURE', `The Stripe signature does not match: ${(err as Error).message}`);
      }
      return readEvent(event);
    },

    async submitEvidence({ paymentId, disputeRef, evidence }) {
      // submit: true sends it to the bank at once (Stripe takes evidence once); the key makes a retried call the same one.
      await stripe.disputes.update(
        disputeRef,
        {
          evidence: {
            customer_name: evidence.customerName,
            customer_email_address: evidence.customerEmail ?? undefined,
            product_description: evidence.productDescription,
            service_date: evidence.serviceDate,
            access_activity_log: evidence.accessActivityLog,
            uncategorized_text: `Delivery of the goods to the game:\n${evidence.deliveryLog}`,
          },
          metadata: { paymentID: paymentId },
          submit: true,
        },
        { idempotencyKey: `evidence-${paymentId}` },
      );
    },

    async refund({ paymentId, chargeRef }) {
      // The whole payment intent; the idempotency key makes a retried refund the same one.
      const refund = await stripe.refunds.create({ payment_intent: chargeRef }, { idempotencyKey: `refund-${paymentId}` });
      if (refund.object !== 'refund' || refund.status === 'failed' || refund.status === 'canceled') {
        throw new Error(`Stripe did not refund payment intent ${chargeRef} (${String(refund.status)}).`);
      }
    },
  };
}

function disputeFacts(dispute: Stripe.Dispute): DisputeFacts {
  return { ref: dispute.id, reason: dispute.reason, amount: dispute.amount, currency: dispute.currency?.toUpperCase() };
}

function readEvent(event: Stripe.Event): GatewayEvent {
  const eventId = event.id;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const session = event.data.object;
      if (session.mode === 'subscription') return sessionStarted(eventId, session) ?? { eventId, kind: 'ignored' };
      // Delayed methods (bank debits) complete the session unpaid; async_payment_succeeded follows.
      if (session.payment_status !== 'paid') return { eventId, kind: 'ignored' };
      if (session.amount_total === null || !session.currency) throw new DomainError('INVALID_WEBHOOK', `Session ${session.id} has no amount.`);
      return {
        eventId,
        kind: 'completed',
        paymentId: session.client_reference_id ?? undefined,
        checkoutRef: session.id,
        chargeRef: idOf(session.payment_intent),
        amount: session.amount_total,
        currency: session.currency,
        tax: session.automatic_tax?.enabled
          ? {
              amount: session.total_details?.amount_tax ?? 0,
              // Added at checkout, the tax makes the total more than the subtotal; included, it is within it.
              inclusive: session.amount_total === session.amount_subtotal,
              country: session.customer_details?.address?.country ?? undefined,
            }
          : undefined,
      };
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      return {
        eventId,
        kind: 'refunded',
        paymentId: charge.metadata.paymentID,
        chargeRef: idOf(charge.payment_intent),
        refundedTotal: charge.amount_refunded,
      };
    }
    case 'charge.dispute.created': {
      const dispute = event.data.object;
      return { eventId, kind: 'disputed', chargeRef: idOf(dispute.payment_intent), dispute: disputeFacts(dispute) };
    }
    case 'charge.dispute.closed': {
      const dispute = event.data.object;
      // An inquiry closed without a chargeback (`warning_closed`) leaves the money with the merchant, as a win does.
      const kind = dispute.status === 'won' || dispute.status === 'warning_closed' ? 'dispute-won' : dispute.status === 'lost' ? 'dispute-lost' : undefined;
      return kind ? { eventId, kind, chargeRef: idOf(dispute.payment_intent), dispute: disputeFacts(dispute) } : { eventId, kind: 'ignored' };
    }
    default:
      return readBillingEvent(event) ?? { eventId, kind: 'ignored' };
  }
}
