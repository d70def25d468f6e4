/**
 * Subscriptions paid at a gateway (Stripe Billing): the payments feature opens the checkout and
 * stops the gateway charging; the subscription itself, and its events, are the subscriptions
 * feature's (it registers the hook that webhooks.ts hands those events to).
 */
import type { FastifyBaseLogger } from 'fastify';
import { DomainError } from '../../core/errors.ts';
import type { Blocks } from './blocks.ts';
import { urlOf } from './checkout.ts';
import type { CheckoutSession, GatewayAdapter, SubscriptionChangeRequest, SubscriptionCheckoutRequest } from './contract.ts';
import type { Gateways } from './gateways.ts';

type SubscriptionGateway = GatewayAdapter & Required<Pick<GatewayAdapter, 'createSubscriptionCheckout' | 'cancelSubscription'>>;

export class SubscriptionCheckouts {
  readonly #log: FastifyBaseLogger;
  readonly #gateways: Gateways;
  readonly #blocks: Blocks;

  constructor(log: FastifyBaseLogger, gateways: Gateways, blocks: Blocks) {
    this.#log = log;
    this.#gateways = gateways;
    this.#blocks = blocks;
  }

  /** A gateway that sells subscriptions, or GATEWAY_UNAVAILABLE. */
  #adapter(gateway: string): SubscriptionGateway {
    const adapter = this.#gateways.require(gateway);
    if (!adapter.createSubscriptionCheckout || !adapter.cancelSubscription)
      throw new DomainError('GATEWAY_UNAVAILABLE', `The gateway ${gateway} does not sell subscriptions.`);
    return adapter as SubscriptionGateway;
  }

  async start(gateway: string, request: SubscriptionCheckoutRequest): Promise<CheckoutSession> {
    const adapter = this.#adapter(gateway);
    const returnURL = urlOf(request.returnURL, 'returnURL');
    const cancelURL = urlOf(request.cancelURL, 'cancelURL');
    await this.#blocks.refuse({ userId: request.userId });
    try {
      return await adapter.createSubscriptionCheckout({ ...request, returnURL, cancelURL });
    } catch (err) {
      if (err instanceof DomainError) throw err;
      this.#log.error({ err, gateway, reference: request.reference }, 'the gateway refused the subscription checkout');
      throw new DomainError('GATEWAY_ERROR', `The gateway ${gateway} did not create the checkout; try again later.`);
    }
  }

  async change(gateway: string, request: SubscriptionChangeRequest): Promise<void> {
    const adapter = this.#adapter(gateway);
    if (!adapter.changeSubscription) throw new DomainError('GATEWAY_UNAVAILABLE', `The gateway ${gateway} does not change a subscription's price.`);
    try {
      await adapter.changeSubscription(request);
    } catch (err) {
      if (err instanceof DomainError) throw err;
      this.#log.error({ err, gateway, subscriptionRef: request.subscriptionRef }, "the gateway refused to change the subscription's price");
      throw new DomainError('GATEWAY_ERROR', `The gateway ${gateway} did not change subscription ${request.subscriptionRef}; try again later.`);
    }
  }

  async cancel(gateway: string, request: { subscriptionRef: string; atPeriodEnd: boolean }): Promise<void> {
    const adapter = this.#adapter(gateway);
    try {
      await adapter.cancelSubscription(request);
    } catch (err) {
      if (err instanceof DomainError) throw err;
      this.#log.error({ err, gateway, subscriptionRef: request.subscriptionRef }, 'the gateway refused to cancel the subscription');
      throw new DomainError('GATEWAY_ERROR', `The gateway ${gateway} did not cancel subscription ${request.subscriptionRef}; try again later.`);
    }
  }
}
