/**
 * PayPal Subscriptions over the REST API: a catalog product and a billing plan for the terms, then
 * the subscription the player approves; its webhooks (BILLING.SUBSCRIPTION.ACTIVATED,
 * PAYMENT.SALE.COMPLETED, BILLING.SUBSCRIPTION.PAYMENT.FAILED, .CANCELLED, .EXPIRED) read as the
 * payments contract's subscription events.
 */
import { DomainError } from '../../core/errors.ts';
import { formatMoney, parseMoney, toTimestamp } from '../../core/format.ts';
import type { CheckoutSession, SubscriptionCheckoutRequest, SubscriptionGatewayEvent } from './contract.ts';

/** The PayPal adapter's JSON call with its OAuth token. */
export type PayPalApi = <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: T }>;

interface Money {
  currency_code?: string;
  value?: string;
}

/** One product and plan per checkout, each keyed by our reference so a retried call makes none twice. */
export async function createPayPalSubscription(api: PayPalApi, request: SubscriptionCheckoutRequest): Promise<CheckoutSession> {
  const key = `subscription-${request.reference}`;
  const product = await api<{ id?: string }>(
    'POST',
    '/v1/catalogs/products',
    { name: request.description.slice(0, 127), type: 'DIGITAL' },
    { 'paypal-request-id': `${key}-product` },
  );
  if (product.status >= 300 || !product.body.id) throw new Error(`PayPal refused the product (HTTP ${product.status}).`);
  const price = { value: formatMoney(request.amount), currency_code: request.currency };
  const regular = {
    frequency: { interval_unit: request.interval.unit.toUpperCase(), interval_count: request.interval.count },
    tenure_type: 'REGULAR',
    sequence: request.trialDays > 0 ? 2 : 1,
    total_cycles: 0,
    pricing_scheme: { fixed_price: price },
  };
  const trial = { frequency: { interval_unit: 'DAY', interval_count: request.trialDays }, tenure_type: 'TRIAL', sequence: 1, total_cycles: 1 };
  const plan = await api<{ id?: string }>(
    'POST',
    '/v1/billing/plans',
    {
      product_id: product.body.id,
      name: request.description.slice(0, 127),
      billing_cycles: request.trialDays > 0 ? [trial, regular] : [regular],
      payment_preferences: { auto_bill_outstanding: true, payment_failure_threshold: 3 },
    },
    { 'paypal-request-id': `${key}-plan` },
  );
  if (plan.status >= 300 || !plan.body.id) throw new Error(`PayPal refused the plan (HTTP ${plan.status}).`);
  const subscription = await api<{ id?: string; links?: { rel: string; href: string }[] }>(
    'POST',
    '/v1/billing/subscriptions',
    {
      plan_id: plan.body.id,
      custom_id: request.reference,
      application_context: { return_url: request.returnURL, cancel_url: request.cancelURL, user_action: 'SUBSCRIBE_NOW', shipping_preference: 'NO_SHIPPING' },
    },
    { 'paypal-request-id': key },
  );
  const approve = subscription.body.links?.find((l) => l.rel === 'approve');
  if (subscription.status >= 300 || !subscription.body.id || !approve) throw new Error(`PayPal refused the subscription (HTTP ${subscription.status}).`);
  return { checkoutRef: subscription.body.id, checkoutURL: approve.href };
}

/** PayPal bills nothing more once cancelled, and has no cancel at the period's end: the store ends it then. */
export async function cancelPayPalSubscription(api: PayPalApi, subscriptionRef: string): Promise<void> {
  const res = await api<{ details?: { issue?: string }[] }>('POST', `/v1/billing/subscriptions/${encodeURIComponent(subscriptionRef)}/cancel`, {
    reason: 'Cancelled at the store',
  });
  // Cancelled or expired before: nothing is billed either way.
  if (res.status === 422 && res.body.details?.some((d) => d.issue === 'SUBSCRIPTION_STATUS_INVALID')) return;
  if (res.status >= 300) throw new Error(`PayPal refused to cancel subscription ${subscriptionRef} (HTTP ${res.status}).`);
}

function cents(money: Money | undefined): { amount: number; currency: string } | undefined {
  const amount = parseMoney(money?.value);
  return amount === undefined || !money?.currency_code ? undefined : { amount, currency: money.currency_code };
}

const timeOf = (value: unknown): string | undefined => {
  const at = typeof value === 'string' ? new Date(value) : undefined;
  return at && !Number.isNaN(at.getTime()) ? toTimestamp(at) : undefined;
};

/** The subscription events PayPal sends; undefined for any other. */
export function readPayPalBillingEvent(eventId: string, type: string, resource: Record<string, unknown>): SubscriptionGatewayEvent | undefined {
  const id = typeof resource.id === 'string' ? resource.id : undefined;
  const billing = resource.billing_info as { last_payment?: { amount?: Money }; last_failed_payment?: { amount?: Money } } | undefined;
  switch (type) {
    case 'BILLING.SUBSCRIPTION.ACTIVATED': {
      if (!id || typeof resource.custom_id !== 'string') throw new DomainError('INVALID_WEBHOOK', 'The subscription has no id or custom_id.');
      // A trial's activation has no payment yet.
      const paid = cents(billing?.last_payment?.amount);
      return {
        eventId,
        kind: 'subscription-started',
        subscriptionRef: id,
        reference: resource.custom_id,
        amount: paid?.amount ?? 0,
        currency: paid?.currency ?? '',
      };
    }
    case 'PAYMENT.SALE.COMPLETED': {
      const agreement = resource.billing_agreement_id;
      if (typeof agreement !== 'string') return undefined;
      const total = resource.amount as { total?: string; currency?: string } | undefined;
      const paid = cents({ value: total?.total, currency_code: total?.currency });
      if (!paid) throw new DomainError('INVALID_WEBHOOK', `Sale ${String(id)} has no readable amount.`);
      return { eventId, kind: 'subscription-paid', subscriptionRef: agreement, ...paid, paidAt: timeOf(resource.create_time) };
    }
    case 'BILLING.SUBSCRIPTION.PAYMENT.FAILED':
      return id ? { eventId, kind: 'subscription-failed', subscriptionRef: id, amount: cents(billing?.last_failed_payment?.amount)?.amount ?? 0 } : undefined;
    case 'BILLING.SUBSCRIPTION.CANCELLED':
    case 'BILLING.SUBSCRIPTION.EXPIRED':
      return id ? { eventId, kind: 'subscription-ended', subscriptionRef: id } : undefined;
    default:
      return undefined;
  }
}
