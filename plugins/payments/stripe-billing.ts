/**
 * Stripe Billing: Checkout in subscription mode, and the events of the subscriptions it starts
 * (the first payment by the session's completion, renewals by `invoice.paid`, failures by
 * `invoice.payment_failed`, the end by `customer.subscription.deleted`).
 */
import type Stripe from 'stripe';
import { DomainError } from '../../core/errors.ts';
import { toTimestamp } from '../../core/format.ts';
import type { CheckoutSession, SubscriptionChangeRequest, SubscriptionCheckoutRequest, SubscriptionGatewayEvent } from './contract.ts';

const idOf = (value: string | { id: string } | null | undefined): string | undefined => (typeof value === 'string' ? value : value?.id);

export async function createSubscriptionCheckout(stripe: Stripe, request: SubscriptionCheckoutRequest): Promise<CheckoutSession> {
  const session = await stripe.checkout.sessions.create({
    mode: 'subscription',
    line_items: [
      {
        quantity: 1,
        price_data: {
          currency: request.currency.toLowerCase(),
          unit_amount: request.amount,
          product_data: { name: request.description },
          recurring: { interval: request.interval.unit, interval_count: request.interval.count },
        },
      },
    ],
    subscription_data: {
      metadata: { subscriptionReference: request.reference },
      ...(request.trialDays > 0 ? { trial_period_days: request.trialDays } : {}),
    },
    success_url: request.returnURL,
    cancel_url: request.cancelURL,
    client_reference_id: request.reference,
    metadata: { subscriptionReference: request.reference },
  });
  if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a URL.`);
  return { checkoutRef: session.id, checkoutURL: session.url };
}

export async function cancelSubscription(stripe: Stripe, { subscriptionRef, atPeriodEnd }: { subscriptionRef: string; atPeriodEnd: boolean }): Promise<void> {
  if (atPeriodEnd) await stripe.subscriptions.update(subscriptionRef, { cancel_at_period_end: true });
  else await stripe.subscriptions.cancel(subscriptionRef);
}

/** The subscription's one item moves to the new price now; Stripe prorates the rest of the period on the next invoice. */
export async function changeSubscription(stripe: Stripe, request: SubscriptionChangeRequest): Promise<void> {
  const subscription = await stripe.subscriptions.retrieve(request.subscriptionRef);
  const [item] = subscription.items.data;
  if (!item) throw new Error(`Stripe subscription ${request.subscriptionRef} has no item.`);
  const product = typeof item.price.product === 'string' ? item.price.product : item.price.product.id;
  await stripe.subscriptions.update(request.subscriptionRef, {
    items: [
      {
        id: item.id,
        price_data: {
          currency: request.currency.toLowerCase(),
          unit_amount: request.amount,
          product,
          recurring: { interval: request.interval.unit, interval_count: request.interval.count },
        },
      },
    ],
    proration_behavior: 'create_prorations',
  });
}

/** A subscription-mode session paid (or its trial begun): the subscription starts. */
export function sessionStarted(eventId: string, session: Stripe.Checkout.Session): SubscriptionGatewayEvent | undefined {
  // A delayed method completes the session unpaid; async_payment_succeeded follows.
  if (session.payment_status === 'unpaid') return undefined;
  const subscriptionRef = idOf(session.subscription);
  if (!subscriptionRef || !session.client_reference_id || !session.currency)
    throw new DomainError('INVALID_WEBHOOK', `Session ${session.id} names no subscription or reference.`);
  return {
    eventId,
    kind: 'subscription-started',
    subscriptionRef,
    reference: session.client_reference_id,
    amount: session.amount_total ?? 0,
    currency: session.currency,
  };
}

function subscriptionOf(invoice: Stripe.Invoice): string | undefined {
  return idOf(invoice.parent?.subscription_details?.subscription);
}

/** The events of Stripe Billing this store acts on; undefined for any other. */
export function readBillingEvent(event: Stripe.Event): SubscriptionGatewayEvent | undefined {
  const eventId = event.id;
  switch (event.type) {
    case 'invoice.paid': {
      const invoice = event.data.object;
      const subscriptionRef = subscriptionOf(invoice);
      // The first invoice is the checkout's, which the session's completion starts; an update's proration is no new period.
      if (!subscriptionRef || invoice.billing_reason !== 'subscription_cycle') return undefined;
      const end = invoice.lines?.data?.[0]?.period?.end;
      return {
        eventId,
        kind: 'subscription-paid',
        subscriptionRef,
        amount: invoice.amount_paid,
        currency: invoice.currency,
        periodEnd: typeof end === 'number' ? toTimestamp(new Date(end * 1000)) : undefined,
      };
    }
    case 'invoice.payment_failed': {
      const invoice = event.data.object;
      const subscriptionRef = subscriptionOf(invoice);
      return subscriptionRef ? { eventId, kind: 'subscription-failed', subscriptionRef, amount: invoice.amount_due } : undefined;
    }
    case 'customer.subscription.deleted':
      return { eventId, kind: 'subscription-ended', subscriptionRef: event.data.object.id };
    default:
      return undefined;
  }
}
