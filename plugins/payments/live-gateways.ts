/**
 * Stripe and PayPal as registered gateways whose credentials may change while the server runs
 * (set in the console): each call goes to an adapter made from the credentials in use, made again
 * when they change; while one is missing the gateway is off, saying which.
 */
import { DomainError } from '../../core/errors.ts';
import type { GatewayAdapter } from './contract.ts';
import type { GatewayName, GatewaySettings } from './gateway-settings.ts';
import { paypalGateway } from './paypal.ts';

export interface LiveOptions {
  stripe: { timeoutMs: number; networkRetries: number };
  paypal: { timeoutMs: number };
}

/** Stripe's calls, its module being loaded only once it is set up (an adapter's calls are the same whatever its credentials). */
const STRIPE_CALLS: (keyof GatewayAdapter)[] = [
  'createCheckout',
  'parseWebhook',
  'refund',
  'createSubscriptionCheckout',
  'cancelSubscription',
  'changeSubscription',
  'submitEvidence',
];

/** The calls a gateway's adapter has, read off one made without credentials (making one calls nothing). */
function callsOf(name: GatewayName, opts: LiveOptions): (keyof GatewayAdapter)[] {
  if (name === 'stripe') return STRIPE_CALLS;
  const probe = paypalGateway({ clientId: '', clientSecret: '', webhookId: '', apiBase: 'http://127.0.0.1' }, opts.paypal);
  return (Object.keys(probe) as (keyof GatewayAdapter)[]).filter((k) => typeof probe[k] === 'function');
}

async function make(name: GatewayName, v: Record<string, string>, opts: LiveOptions): Promise<GatewayAdapter> {
  if (name === 'paypal') {
    return paypalGateway({ clientId: v.clientId!, clientSecret: v.clientSecret!, webhookId: v.webhookId!, apiBase: v.apiBase! }, opts.paypal);
  }
  // The Stripe SDK is loaded only once Stripe is set up: it is the biggest module we have.
  const { stripeGateway } = await import('./stripe.ts');
  return stripeGateway({ secretKey: v.secretKey!, webhookSecret: v.webhookSecret! }, { ...opts.stripe, apiBase: v.apiBase! });
}

export function liveGateway(name: GatewayName, credentials: GatewaySettings, opts: LiveOptions): GatewayAdapter {
  let made: { key: string; adapter: Promise<GatewayAdapter> } | undefined;
  const adapter = (): Promise<GatewayAdapter> => {
    const values = credentials.current(name);
    const key = JSON.stringify(values);
    if (made?.key !== key) made = { key, adapter: make(name, values, opts) };
    return made.adapter;
  };
  const live: Record<string, unknown> = {
    name,
    ...(name === 'stripe' ? { computesTax: true } : {}),
    offReason: () => {
      const missing = credentials.missing(name);
      return missing.length ? `${missing.join(', ')} not set (Payments → Gateways in the console, or the environment)` : undefined;
    },
  };
  for (const call of callsOf(name, opts)) {
    live[call] = async (request: unknown) => ((await adapter())[call] as (r: unknown) => Promise<unknown>)(request);
  }
  return live as unknown as GatewayAdapter;
}

/** Asks the gateway's API whether the credentials in use are taken; throws GATEWAY_ERROR with its answer when not. */
export async function checkCredentials(name: GatewayName, credentials: GatewaySettings, timeoutMs: number): Promise<void> {
  const missing = credentials.missing(name);
  if (missing.length) throw new DomainError('GATEWAY_UNAVAILABLE', `The gateway ${name} is not set up: ${missing.join(', ')} not set.`);
  const v = credentials.current(name);
  const base = v.apiBase!.replace(/\/+$/, '');
  const res = await (name === 'stripe'
    ? fetch(`${base}/v1/balance`, { headers: { authorization: `Bearer ${v.secretKey}` }, signal: AbortSignal.timeout(timeoutMs) })
    : fetch(`${base}/v1/oauth2/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${v.clientId}:${v.clientSecret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials',
        signal: AbortSignal.timeout(timeoutMs),
      })
  ).catch((err: unknown) => {
    throw new DomainError('GATEWAY_ERROR', `${name} did not answer: ${(err as Error).message}`);
  });
  if (!res.ok) throw new DomainError('GATEWAY_ERROR', `${name} refused the credentials (HTTP ${res.status}).`);
}
