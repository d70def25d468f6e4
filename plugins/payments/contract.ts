/**
 * The payments feature's contract: the gateway adapter interface (a third-party feature ships
 * another gateway by implementing it and calling `registerGateway`), and the event it emits.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';
import type { PromotionCodes } from '../store/contract.ts';

export interface CheckoutRequest {
  /** Our payment id: the gateway carries it back in its events (metadata, custom id). */
  paymentId: string;
  /** Cents of `currency`. */
  amount: number;
  /** ISO 4217, upper case. */
  currency: string;
  /** Shown to the player on the gateway's page. */
  description: string;
  returnURL: string;
  cancelURL: string;
  /**
   * Tax a gateway that `computesTax` should compute (the site's taxMode), on top of `amount`
   * (exclusive) or within it; absent while tax is off, and for the other gateways.
   */
  tax?: 'inclusive' | 'exclusive';
  /**
   * For a gateway that computes no tax, while tax is on: cents of tax within `amount`, from the
   * owner's rate table (`amount` is then what the buyer pays, the tax added already when exclusive).
   */
  taxAmount?: number;
  /** The owner asks for 3-D Secure on every card payment (a gateway that cannot ask ignores it). */
  threeDSecure?: boolean;
}

export interface CheckoutSession {
  /** The gateway's id of this checkout (Stripe session id, PayPal order id). */
  checkoutRef: string;
  /** Where the player pays. */
  checkoutURL: string;
}

/** A webhook as it arrived: the raw bytes (signatures cover them) and the headers, lower-cased. */
export interface WebhookRequest {
  rawBody: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * What a verified webhook means for a payment. The payment is found by `paymentId` when the
 * gateway echoes ours, else by `checkoutRef`, else by `chargeRef`.
 */
export type GatewayEvent =
  | ({
      /** The gateway's event id: each is acted on once. */
      eventId: string;
      paymentId?: string;
      checkoutRef?: string;
      chargeRef?: string;
    } & (
      | { kind: 'completed'; amount: number; currency: string; tax?: TaxFacts }
      /** `refundedTotal`: cents refunded so far, when the gateway says; less than the amount paid changes nothing. */
      | { kind: 'refunded'; refundedTotal?: number }
      | { kind: 'disputed'; dispute?: DisputeFacts }
      /** The merchant won the dispute: the money stays, so what the dispute took back is undone. */
      | { kind: 'dispute-won'; dispute?: DisputeFacts }
      /** The payer's bank ruled for the payer: the money is gone for good (the credits went when it opened). */
      | { kind: 'dispute-lost'; dispute?: DisputeFacts }
      /** Verified but of no interest (another event type): acknowledged, nothing changes. */
      | { kind: 'ignored' }
    ))
  | SubscriptionGatewayEvent;

/**
 * What a verified webhook means for a subscription paid at its gateway: the payments feature hands
 * these to the hook the subscriptions feature registers (`onSubscriptionEvent`), which acts on each once.
 * `subscription-started`: the checkout was paid (or its free trial began); `reference` is the one it was started with.
 */
export type SubscriptionGatewayEvent = {
  /** The gateway's event id. */
  eventId: string;
  /** The gateway's id of the subscription (Stripe's `sub_…`). */
  subscriptionRef: string;
} & (
  | { kind: 'subscription-started'; reference: string; amount: number; currency: string }
  /**
   * A period was paid; `periodEnd` (UTC `YYYY-MM-DD HH:MM:SS`) when the gateway says. `paidAt`, when
   * the gateway does not say which payment it is (PayPal): a payment well before the running period's
   * end is that period's own (the first), not the next.
   */
  | { kind: 'subscription-paid'; amount: number; currency: string; periodEnd?: string; paidAt?: string }
  /** A renewal's charge failed: the gateway tries again by its own rules. */
  | { kind: 'subscription-failed'; amount: number }
  /** The gateway ended the subscription (cancelled, or unpaid after its retries). */
  | { kind: 'subscription-ended' }
);

/** A subscription's checkout: the first period paid at the gateway, the later ones charged by it. */
export interface SubscriptionCheckoutRequest {
  /** Ours: the gateway carries it back in the start event. */
  reference: string;
  /** The subscriber: a player blocked from paying (a dispute) is refused, PURCHASES_BLOCKED. */
  userId: number;
  /** Cents of `currency` per interval. */
  amount: number;
  currency: string;
  description: string;
  interval: { unit: 'day' | 'week' | 'month' | 'year'; count: number };
  /** Free days before the first charge; 0 for none. */
  trialDays: number;
  returnURL: string;
  cancelURL: string;
}

/** A gateway's subscription moved to new terms at once (a change of tier), the difference prorated by the gateway. */
export interface SubscriptionChangeRequest {
  subscriptionRef: string;
  /** Cents of `currency` per interval from now on. */
  amount: number;
  currency: string;
  interval: { unit: 'day' | 'week' | 'month' | 'year'; count: number };
}

/** What the subscriptions feature's hook did with an event: `duplicate` when it was acted on before, `unchanged` when past that state. */
export type SubscriptionEventResult = 'started' | 'renewed' | 'payment_failed' | 'ended' | 'ignored' | 'duplicate' | 'unchanged';

/** The tax a gateway computed on a payment (Stripe Tax); the completion's `amount` is then what the buyer paid, tax included. */
export interface TaxFacts {
  /** Cents of the payment's currency. */
  amount: number;
  /** Included in the price (true), or added to it at checkout. */
  inclusive: boolean;
  /** The buyer's billing country (ISO 3166-1 alpha-2), as the gateway collected it or the buyer chose it. */
  country?: string;
  /** The state or province whose rate applied (the owner's rate table); '' or absent for the country's. */
  region?: string;
  /** The country of the buyer's address (the owner's proxy header), recorded beside `country` as evidence. */
  ipCountry?: string;
  /** The owner's rate applied, in thousandths of a percent; absent when the gateway computed the tax. */
  rate?: number;
}

/** What a gateway says of a dispute; each part when it says it. */
export interface DisputeFacts {
  /** The gateway's id of the dispute. */
  ref?: string;
  /** The gateway's reason code (fraudulent, MERCHANDISE_OR_SERVICE_NOT_RECEIVED, …). */
  reason?: string;
  /** Cents of `currency` disputed. */
  amount?: number;
  currency?: string;
}

export interface GatewayAdapter {
  /** The `<gateway>` of `/api/payments/webhooks/<gateway>` and of checkout requests: `[a-z0-9-]+`. */
  readonly name: string;
  /**
   * A gateway that moves no money (the built-in `test` one): offered only while the site setting
   * testMode is on, its orders are test orders, it takes no top-ups and never credits a balance.
   */
  readonly test?: boolean;
  /** The gateway computes the tax itself (Stripe Tax); any other is charged the tax of the owner's rate table. */
  readonly computesTax?: boolean;
  /** Optional: why the gateway is off now (its credentials not set yet); undefined while it is on. */
  offReason?(): string | undefined;
  createCheckout(request: CheckoutRequest): Promise<CheckoutSession>;
  /**
   * Verifies the webhook's signature and reads it. Throws an error whose `code` is
   * INVALID_SIGNATURE when it is not from the gateway, INVALID_WEBHOOK when it is signed but
   * unreadable (a DomainError, or any Error with that `code`: a package needs no host code).
   * Any other error is the gateway failing: a 502 the gateway retries.
   */
  parseWebhook(request: WebhookRequest): Promise<GatewayEvent>;
  /**
   * Optional: gives a completed payment's money back in full (a guest's purchase that could no
   * longer be made). Keyed by `paymentId` at the gateway, so a retry refunds once. Without it such
   * a payment is left `refund-due` for staff.
   */
  refund?(request: { paymentId: string; chargeRef: string; amount: number; currency: string }): Promise<void>;
  /** Optional: a checkout that starts a subscription the gateway charges each interval (Stripe Billing). */
  createSubscriptionCheckout?(request: SubscriptionCheckoutRequest): Promise<CheckoutSession>;
  /** Optional, with createSubscriptionCheckout: stops the gateway charging, at the period's end or now. */
  cancelSubscription?(request: { subscriptionRef: string; atPeriodEnd: boolean }): Promise<void>;
  /** Optional: a subscription's price changed now, the rest of the period prorated (Stripe's subscription update). */
  changeSubscription?(request: SubscriptionChangeRequest): Promise<void>;
  /** Optional: sends a dispute's evidence and submits it for review, keyed by `paymentId` so a retry sends it once. */
  submitEvidence?(request: { paymentId: string; disputeRef: string; evidence: DisputeEvidence }): Promise<void>;
}

/** What the store holds for a disputed payment, as text a gateway's evidence form takes. */
export interface DisputeEvidence {
  customerName: string;
  customerEmail: string | null;
  productDescription: string;
  /** `YYYY-MM-DD`: when the goods were bought (and delivered). */
  serviceDate: string;
  /** The account's creation, sign-ins with their addresses, and the payment. */
  accessActivityLog: string;
  /** Each game command: when it was queued for its server and when the server acknowledged it. */
  deliveryLog: string;
}

/** The codes a gateway's webhook refusal may carry (see GatewayAdapter.parseWebhook). */
export const WEBHOOK_REFUSALS = ['INVALID_SIGNATURE', 'INVALID_WEBHOOK'];

/** A top-up package as a front end shows it; money in cents. */
export interface TopUpPackage {
  id: number;
  name: string;
  price: number;
  currency: string;
  /** Credits added, bonus included. */
  credits: number;
}

/** A line of a direct purchase: a product, how many, the variables chosen. */
export interface PurchaseLine {
  productId: number;
  quantity: number;
  variables: Record<string, string>;
}

export interface PurchaseRequest {
  gateway: string;
  /** The buyer's account; or, for a guest, `guestName`: the in-game name the commands run for. */
  userId?: number;
  guestName?: string;
  /** A guest's email for the receipt and the order's link, as the site setting guestEmail asks (required, optional, off: ignored). */
  guestEmail?: string;
  lines: PurchaseLine[];
  /** A coupon and a gift card, priced now and taken for good when the payment completes. */
  codes?: PromotionCodes;
  returnURL: string;
  cancelURL: string;
  /** The buyer's address, for a block naming addresses. */
  ip?: string;
  /** The buyer's country (ISO 3166-1 alpha-2), for the owner's tax rates while tax is on. */
  billingCountry?: string;
  /** The buyer's state or province (CA, QC) where the owner's rates differ by it. */
  billingRegion?: string;
  /** The request's headers, lower-cased: the country of the buyer's address is read from the one the owner names (ipCountryHeader). */
  headers?: Record<string, string | string[] | undefined>;
}

/**
 * Where a direct purchase or a top-up stands: `pending` until the gateway's webhook; `completed`
 * with its store order; `credited` when the money arrived but the purchase could no longer be made
 * (stock ran out, a rule stopped holding) and went to the buyer's balance instead; `refunded` when
 * it went back through the gateway; `refund-due` when it must go back but the gateway cannot refund
 * by itself (staff refund it); `expired` when nobody paid in time (a late payment still completes).
 */
export interface PurchaseStatus {
  paymentId: string;
  kind: 'purchase' | 'top-up';
  status: 'pending' | 'completed' | 'credited' | 'refund-due' | 'refunded' | 'disputed' | 'expired';
  userId: number | null;
  guestName: string | null;
  /** Cents of `currency`. */
  amount: number;
  currency: string;
  orderId: number | null;
  /** Made at a test gateway (test mode): no money moves. */
  test: boolean;
}

export interface PaymentsService {
  /** Makes a gateway available to checkouts and webhooks; a name can be registered once. */
  registerGateway(adapter: GatewayAdapter): void;
  /** The gateways a player can pay with now (registered and configured). */
  availableGateways(): string[];
  /** The top-up packages on offer, cheapest first. */
  topUpPackages(): Promise<TopUpPackage[]>;
  /** A top-up of a package at a gateway for a user: a pending payment and where to pay it. */
  startTopUp(request: {
    gateway: string;
    userId: number;
    packageId: number;
    returnURL: string;
    cancelURL: string;
  }): Promise<{ paymentId: string; checkoutURL: string }>;
  /**
   * A basket paid directly at a gateway: the prices are read from the catalogue now (never from the
   * caller) and kept with the pending payment; the gateway's verified webhook completes it through
   * the store's buy exactly once.
   */
  startPurchase(request: PurchaseRequest): Promise<StartedPurchase>;
  /** PAYMENT_NOT_FOUND when there is no such payment. */
  purchaseStatus(paymentId: string): Promise<PurchaseStatus>;
  /**
   * A subscription's checkout at a gateway that sells them. GATEWAY_UNAVAILABLE when the gateway is
   * off or cannot, INVALID_URL for a bad return or cancel URL, GATEWAY_ERROR when it fails.
   */
  startSubscription(gateway: string, request: SubscriptionCheckoutRequest): Promise<CheckoutSession>;
  /** Stops a gateway's subscription charging (at the period's end, or now). GATEWAY_UNAVAILABLE, GATEWAY_ERROR. */
  cancelSubscription(gateway: string, request: { subscriptionRef: string; atPeriodEnd: boolean }): Promise<void>;
  /** A subscription's new price from now on, prorated by the gateway. GATEWAY_UNAVAILABLE (a gateway that cannot), GATEWAY_ERROR. */
  changeSubscription(gateway: string, request: SubscriptionChangeRequest): Promise<void>;
  /**
   * The hook the subscriptions feature registers: each verified subscription event of a gateway's
   * webhook is handed to it (one hook; without one such events are `ignored`).
   */
  onSubscriptionEvent(handler: (gateway: string, event: SubscriptionGatewayEvent) => Promise<SubscriptionEventResult>): void;
  /** The tax recorded on the payment of a store order, with the seller's tax number; undefined when it carries none. */
  orderTax(orderId: number): Promise<OrderTax | undefined>;
}

/** The tax line of an order's receipt and page. */
export interface OrderTax {
  /** Cents of `currency`. */
  amount: number;
  currency: string;
  /** Within the order's total (true), or paid on top of it at checkout. */
  inclusive: boolean;
  /** The buyer's billing country (ISO 3166-1 alpha-2); '' when unknown. */
  country: string;
  /** The site's sellerTaxNumber; '' when unset. */
  sellerTaxNumber: string;
}

/** A direct purchase started: where to pay, the basket's price, and the owner's tax charged on it (none while tax is off, or at Stripe, which computes its own). */
export interface StartedPurchase {
  paymentId: string;
  checkoutURL: string;
  /** Cents of `currency`, before tax added at checkout. */
  amount: number;
  currency: string;
  tax?: TaxFacts;
}

export const paymentsRef = createServiceRef<PaymentsService>('payments');

/** The payments feature's site settings (its definition declares them). */
export const paymentsSettings = {
  guestEmail: {
    schema: Type.Union([Type.Literal('required'), Type.Literal('optional'), Type.Literal('off')], {
      default: 'optional',
      description: "whether a guest's checkout asks for an email, where the receipt and the order's link are sent",
    }),
    label: 'Ask guests for an email',
    hint: 'required, optional or off: a guest who gives one gets the receipt and a link to follow the order.',
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof paymentsSettings> {}
}

declare module '../../core/events.ts' {
  interface EventMap {
    /** Emitted inside the completing transaction. Money in cents. */
    'payments.completed': { paymentId: string; userId: number; orderId: number; gateway: string; amount: number; currency: string; credits: number };
    /** A payer disputed a payment at its gateway (a chargeback); emitted once per dispute, inside its webhook's transaction. Money in cents. */
    'payments.dispute.opened': {
      paymentId: string;
      userId: number;
      guestName: string | null;
      gateway: string;
      disputeRef: string | null;
      reason: string;
      amount: number;
      currency: string;
    };
    /** A dispute's resolution: `won` gives back what it took, `lost` leaves it taken. */
    'payments.dispute.closed': { paymentId: string; userId: number; gateway: string; disputeRef: string | null; outcome: 'won' | 'lost' };
    /** A player may no longer pay at a gateway (`paymentId`: the dispute that placed it). */
    'payments.block.added': { blockId: number; userId: number; username: string; paymentId: string | null; reason: string };
    /** A block was lifted, by staff (`by` names them) or by the dispute being won. */
    'payments.block.lifted': { blockId: number; userId: number; username: string; by: string };
    /** A refund or dispute took back `reclaimed` credits; `debt` could not be taken (already spent). */
    'payments.reversed': {
      paymentId: string;
      userId: number;
      orderId: number;
      gateway: string;
      kind: 'refunded' | 'disputed';
      reclaimed: number;
      debt: number;
    };
  }
}
