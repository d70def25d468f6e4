/**
 * Webhook-event recording and completion. Exactly once is the database's decision, not ours: each
 * webhook runs in one transaction that locks the payment row first, records the gateway's event id
 * (unique per gateway: a redelivery or a racing copy finds it taken), and moves the payment on only
 * from the state the event expects (`pending` → `completed` → `refunded`/`disputed`). A refund seen
 * before its completion leaves the payment reversed, so the late completion credits nothing. The
 * store order keeps its own unique (payment api, payment id) as a last guard. A direct purchase
 * completes through the store's buy, also from `expired`, or, no longer possible, settles as
 * `credited`, `refunded` or `refund-due` (docs/payments.md).
 */
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { formatMoney, now } from '../../core/format.ts';
import { raw, sql } from '../../core/sql.ts';
import type { PurchaseBuyer } from '../store/contract.ts';
import {
  WEBHOOK_REFUSALS,
  type GatewayAdapter,
  type GatewayEvent,
  type SubscriptionEventResult,
  type SubscriptionGatewayEvent,
  type WebhookRequest,
} from './contract.ts';
import { PaymentsEvent, PaymentsPayment } from './entities.ts';
import type { Disputes } from './disputes.ts';
import type { Gateways } from './gateways.ts';
import { type Payment, type PaymentsDeps, pricedBasket, type WebhookResult } from './model.ts';
import { disputeWon, reverse } from './reversals.ts';
import { netOf, recordTax, storedTax } from './tax.ts';

const P = PaymentsPayment.c;

/** An event about one of our payments (not a subscription's, not ignored). */
type PaymentEvent = Exclude<GatewayEvent, SubscriptionGatewayEvent | { kind: 'ignored' }>;
type SubscriptionHandler = (gateway: string, event: SubscriptionGatewayEvent) => Promise<SubscriptionEventResult>;

const isSubscriptionEvent = (event: GatewayEvent): event is SubscriptionGatewayEvent => event.kind.startsWith('subscription-');

/**
 * A purchase the store refused at completion (stock gone, a rule no longer holding): the completing
 * transaction rolls back whole, since the buy may have written before its last check, and another
 * settles the money.
 */
class Unfulfillable extends Error {
  readonly reason: DomainError;
  constructor(reason: DomainError) {
    super(reason.message);
    this.reason = reason;
  }
}

/** The event id a rejected webhook claims, for the log line only: it is not trusted for anything. */
function claimedEventId(raw: Buffer): string | undefined {
  try {
    const id = (JSON.parse(raw.toString('utf8')) as { id?: unknown }).id;
    return typeof id === 'string' ? id.slice(0, 255) : undefined;
  } catch {
    return undefined;
  }
}

function buyerOf(payment: Payment): PurchaseBuyer {
  if (payment.userId !== 0) return { userId: payment.userId };
  return payment.guestEmail ? { guestName: payment.guestName!, guestEmail: payment.guestEmail } : { guestName: payment.guestName! };
}

export class Webhooks {
  readonly #deps: PaymentsDeps;
  readonly #gateways: Gateways;

  readonly #disputes: Disputes;
  #subscriptions: SubscriptionHandler | undefined;

  constructor(deps: PaymentsDeps, gateways: Gateways, disputes: Disputes) {
    this.#deps = deps;
    this.#gateways = gateways;
    this.#disputes = disputes;
  }

  /** The subscriptions feature's hook (PaymentsService.onSubscriptionEvent). */
  onSubscriptionEvent(handler: SubscriptionHandler): void {
    if (this.#subscriptions) throw new Error('A subscription event handler is registered twice.');
    this.#subscriptions = handler;
  }

  async receive(gateway: string, request: WebhookRequest): Promise<WebhookResult> {
    const adapter = this.#gateways.require(gateway);
    let event: GatewayEvent;
    try {
      event = await adapter.parseWebhook(request);
    } catch (err) {
      const refusal = (err as { code?: unknown }).code;
      const code = typeof refusal === 'string' && WEBHOOK_REFUSALS.includes(refusal) ? refusal : 'GATEWAY_ERROR';
      this.#deps.log.warn({ gateway, eventId: claimedEventId(request.rawBody), code }, 'webhook refused');
      if (code !== 'GATEWAY_ERROR') throw new DomainError(code, (err as Error).message);
      this.#deps.log.error({ err, gateway }, 'webhook verification failed');
      throw new DomainError('GATEWAY_ERROR', `The gateway ${gateway} could not verify the webhook; try again later.`);
    }
    return this.apply(adapter, event);
  }

  /** An event its gateway vouches for (a verified webhook, or the test gateway's checkout page), acted on exactly once. */
  async apply(adapter: GatewayAdapter, event: GatewayEvent): Promise<WebhookResult> {
    const gateway = adapter.name;
    if (event.kind === 'ignored') return 'ignored';
    // A subscription's events are the subscriptions feature's to act on, once, in its own tables.
    if (isSubscriptionEvent(event)) {
      const result = this.#subscriptions ? await this.#subscriptions(gateway, event) : 'ignored';
      this.#deps.log.info({ gateway, eventId: event.eventId, kind: event.kind, result }, 'webhook processed');
      return result;
    }
    try {
      let result: WebhookResult;
      try {
        result = await this.#deps.db.transaction(() => this.#apply(adapter, event));
      } catch (err) {
        if (!(err instanceof Unfulfillable)) throw err;
        result = await this.#deps.db.transaction(() => this.#apply(adapter, event, err.reason));
      }
      this.#deps.log.info({ gateway, eventId: event.eventId, kind: event.kind, result }, 'webhook processed');
      return result;
    } catch (err) {
      if (err instanceof DomainError) this.#deps.log.warn({ gateway, eventId: event.eventId, code: err.code }, 'webhook refused');
      throw err;
    }
  }

  async #lockPayment(gateway: string, event: PaymentEvent): Promise<Payment> {
    const { db } = this.#deps;
    const by = [
      [P.id, event.paymentId],
      [P.checkoutRef, event.checkoutRef],
      [P.chargeRef, event.chargeRef],
    ] as const;
    for (const [column, value] of by) {
      if (!value) continue;
      const [payment] = await PaymentsPayment.select(db, sql`where ${P.gateway} = ${gateway} and ${column} = ${value}${raw(db.forUpdate)}`);
      if (payment) return payment;
    }
    throw new DomainError('UNKNOWN_PAYMENT', `Event ${event.eventId} names no payment of ${gateway}.`);
  }

  /** `unfulfillable`: the store refused this completion's purchase in an earlier try: settle its money instead. */
  async #apply(adapter: GatewayAdapter, event: PaymentEvent, unfulfillable?: DomainError): Promise<WebhookResult> {
    const { db } = this.#deps;
    const gateway = adapter.name;
    const payment = await this.#lockPayment(gateway, event);
    // The owner's table's tax, computed at checkout, when the gateway computed none.
    const tax = event.kind === 'completed' ? (event.tax ?? storedTax(payment)) : undefined;
    if (event.kind === 'completed' && (netOf(event.amount, tax) !== payment.amount || event.currency.toUpperCase() !== payment.currency)) {
      throw new DomainError(
        'AMOUNT_MISMATCH',
        `Event ${event.eventId} paid ${formatMoney(event.amount)} ${event.currency.toUpperCase()}, the payment asks ${formatMoney(payment.amount)} ` +
          `${payment.currency}.`,
      );
    }
    try {
      await PaymentsEvent.insert(db, { gateway, eventId: event.eventId, paymentId: payment.id, kind: event.kind, creationDate: now() });
    } catch (err) {
      if (isUniqueViolation(err)) return 'duplicate';
      throw err;
    }
    if (event.kind === 'completed') {
      const result =
        payment.purchaseLines === null
          ? await this.#complete(payment, event.chargeRef)
          : unfulfillable
            ? await this.#settleUnfulfillable(adapter, payment, event.chargeRef, unfulfillable)
            : await this.#completePurchase(payment, event.chargeRef, adapter.test === true);
      if (tax && (result === 'completed' || result === 'credited')) await recordTax(db, payment.id, payment.currency, tax);
      return result;
    }
    // A partial refund leaves the purchase standing; the refund that makes it whole takes the credits back.
    if (event.kind === 'refunded' && event.refundedTotal !== undefined && event.refundedTotal < payment.amount) return 'ignored';
    // The result says what became of the payment; the dispute's own record (disputes.ts) is kept beside it, a dispute after a refund included.
    if (event.kind === 'dispute-won') {
      const result = await disputeWon(this.#deps, payment);
      await this.#disputes.closed(payment, 'won', event.dispute);
      return result;
    }
    if (event.kind === 'dispute-lost') return (await this.#disputes.closed(payment, 'lost', event.dispute)) ? 'lost' : 'unchanged';
    const result = await reverse(this.#deps, payment, event.kind, event.chargeRef);
    if (event.kind === 'disputed') await this.#disputes.opened(payment, event.dispute);
    return result;
  }

  async #complete(payment: Payment, chargeRef: string | undefined): Promise<WebhookResult> {
    if (payment.status !== 'pending') return 'unchanged';
    const user = await this.#deps.users.requireById(payment.userId);
    const order = await this.#recordCredits(payment, user.username, payment.credits);
    return this.#settle(payment, 'completed', order, chargeRef, payment.credits);
  }

  /** The money of a payment as a `payment` order adding `credits` to the user's balance (ledger reason `payment`). */
  async #recordCredits(payment: Payment, username: string, credits: number): Promise<number> {
    const order = await this.#deps.store.recordPayment({
      username,
      amount: payment.amount,
      credit: credits,
      currency: payment.currency,
      paymentApi: payment.gateway,
      paymentId: payment.id,
    });
    return Number(order.id);
  }

  async #settle(payment: Payment, status: 'completed' | 'credited', orderId: number, chargeRef: string | undefined, credits: number): Promise<WebhookResult> {
    await this.#deps.db.run(sql`update ${PaymentsPayment} set ${P.status} = ${status}, ${P.orderId} = ${orderId},
      ${P.chargeRef} = ${chargeRef ?? payment.chargeRef}, ${P.credits} = ${credits}, ${P.updateDate} = ${now()} where ${P.id} = ${payment.id}`);
    await this.#deps.events.emit('payments.completed', {
      paymentId: payment.id,
      userId: payment.userId,
      orderId,
      gateway: payment.gateway,
      amount: payment.amount,
      currency: payment.currency,
      credits,
    });
    return status;
  }

  /** An expired purchase still completes: the money arrived. */
  async #completePurchase(payment: Payment, chargeRef: string | undefined, test: boolean): Promise<WebhookResult> {
    if (payment.status !== 'pending' && payment.status !== 'expired') return 'unchanged';
    let orderId: number;
    try {
      const { lines, adjustments } = pricedBasket(payment.purchaseLines!);
      ({ orderId } = await this.#deps.store.buyPaid(
        buyerOf(payment),
        lines,
        {
          paymentApi: payment.gateway,
          paymentId: payment.id,
          currency: payment.currency,
          test,
        },
        adjustments,
      ));
    } catch (err) {
      if (err instanceof DomainError && err.code !== 'CONFLICT') throw new Unfulfillable(err);
      throw err;
    }
    return this.#settle(payment, 'completed', orderId, chargeRef, 0);
  }

  /**
   * Paid, but the purchase can no longer be made (decisions in docs/payments.md): an account gets the
   * money as credits (`credited`); a guest, who has no balance, gets it back through the gateway
   * (`refunded`), or staff do when the gateway cannot refund (`refund-due`).
   */
  async #settleUnfulfillable(adapter: GatewayAdapter, payment: Payment, chargeRef: string | undefined, reason: DomainError): Promise<WebhookResult> {
    const { db, users, log } = this.#deps;
    if (payment.status !== 'pending' && payment.status !== 'expired') return 'unchanged';
    const why = { paymentId: payment.id, gateway: adapter.name, code: reason.code, reason: reason.message };
    // A test payment moved no money: it is never credited, only "refunded" by its gateway.
    const user = payment.userId === 0 || adapter.test ? undefined : await users.findById(payment.userId);
    if (user) {
      log.warn(why, "a paid purchase could no longer be made: its money is credited to the buyer's balance");
      return this.#settle(payment, 'credited', await this.#recordCredits(payment, user.username, payment.amount), chargeRef, payment.amount);
    }
    const charge = chargeRef ?? payment.chargeRef;
    let status: 'refunded' | 'refund-due' = 'refund-due';
    if (adapter.refund && charge) {
      try {
        await adapter.refund({ paymentId: payment.id, chargeRef: charge, amount: payment.amount, currency: payment.currency });
      } catch (err) {
        // Rolled back and answered 502: the gateway sends the webhook again, and the refund, keyed by the payment, is made once.
        log.error({ err, ...why }, 'the gateway refused the refund');
        throw new DomainError('GATEWAY_ERROR', `The gateway ${adapter.name} did not refund payment ${payment.id}; try again later.`);
      }
      status = 'refunded';
      log.warn(why, "a guest's paid purchase could no longer be made: refunded through the gateway");
    } else {
      log.error(why, "a guest's paid purchase could no longer be made and the gateway cannot refund it: refund it by hand");
    }
    await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${status}, ${P.chargeRef} = ${charge}, ${P.updateDate} = ${now()}
      where ${P.id} = ${payment.id}`);
    return status;
  }
}
