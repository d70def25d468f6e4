import { defineEntity, p } from '../../core/table.ts';

/** A top-up package: a price in real money and the credits (plus a bonus) it buys. */
export const PaymentsPackage = defineEntity({
  name: 'PaymentsPackage',
  tableName: 'payments_packages',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
    /** Cents of `currency`. */
    price: p.bigint('number'),
    currency: p.string().length(3),
    /** Cents of credits. */
    credits: p.bigint('number'),
    bonus: p.bigint('number'),
    creationDate: p.string().length(19),
  },
});

/** One checkout at a gateway, from creation to completion and maybe a refund. */
export const PaymentsPayment = defineEntity({
  name: 'PaymentsPayment',
  tableName: 'payments_payments',
  // The gateway's id of the checkout (Stripe session, PayPal order) belongs to one payment.
  uniques: [{ properties: ['gateway', 'checkoutRef'] }],
  properties: {
    /** Random and unguessable: the front end shows a payment by this id. */
    id: p.string().length(32).primary(),
    /** The buyer's account; 0 for a guest's purchase (see guestName). */
    userId: p.integer().index(),
    /** A guest's purchase: the in-game name the commands run for. */
    guestName: p.string().length(16).nullable(),
    /** A guest's email for the receipt (the site setting guestEmail asks for it), or null. */
    guestEmail: p.string().length(191).nullable(),
    /** A direct purchase: JSON of its lines with the prices offered (PricedLine[]); null for a top-up. */
    purchaseLines: p.text().nullable(),
    gateway: p.string().length(32),
    checkoutRef: p.string().length(255),
    /** The gateway's id of the money moved (Stripe payment intent, PayPal capture), known once paid. */
    chargeRef: p.string().length(255).nullable().index(),
    packageId: p.integer().nullable(),
    /** Cents of `currency` the player pays. */
    amount: p.bigint('number'),
    currency: p.string().length(3),
    /** Cents of credits added on completion, bonus included (a purchase: 0, or its amount once credited). */
    credits: p.bigint('number'),
    bonus: p.bigint('number'),
    /**
     * `credited`: a purchase paid but no longer possible, its money put on the buyer's balance;
     * `refund-due`: the same for a guest at a gateway that cannot refund: staff refund it by hand.
     */
    status: p.string().length(16).$type<'pending' | 'completed' | 'credited' | 'refund-due' | 'refunded' | 'disputed' | 'expired'>(),
    /** The store order of type `payment` (the purchase, or the credits of a top-up or a credited purchase), once completed. */
    orderId: p.integer().nullable(),
    /** Credits taken back on a refund or dispute. */
    reclaimed: p.bigint('number'),
    /** Credits that could not be taken back (already spent): what the player owes. */
    debt: p.bigint('number'),
    checkoutUrl: p.text(),
    /**
     * JSON of the tax the store computed at checkout from its rate table (TableTax, tax-rates.ts), the
     * completion records; null while tax is off and at a gateway that computes its own (Stripe).
     */
    taxFacts: p.text().nullable(),
    creationDate: p.string().length(19).index(),
    updateDate: p.string().length(19),
  },
});

/** Every gateway event acted on, once: a redelivered or racing webhook finds its id here. */
export const PaymentsEvent = defineEntity({
  name: 'PaymentsEvent',
  tableName: 'payments_events',
  uniques: [{ properties: ['gateway', 'eventId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    gateway: p.string().length(32),
    eventId: p.string().length(255),
    paymentId: p.string().length(32).index(),
    kind: p.string().length(16),
    creationDate: p.string().length(19),
  },
});

/**
 * The checkout a request started, by the request's fingerprint (what is bought, by whom, at which
 * gateway): the key is unique, so of two copies of one request (a form posted twice, on two
 * instances) one inserts it and calls the gateway, and the other finds it and answers the same payment.
 */
export const PaymentsCheckout = defineEntity({
  name: 'PaymentsCheckout',
  tableName: 'payments_checkouts',
  properties: {
    /** SHA-256, hex, of the request's fingerprint. */
    fingerprint: p.string().length(64).primary(),
    /** The payment it started, or is starting: chosen before the gateway is called. */
    paymentId: p.string().length(32),
    /** When the request claimed it: a claim whose payment never came (its instance died) is taken over after a while. */
    creationDate: p.string().length(19).index(),
  },
});

/**
 * A payment's dispute (chargeback) at its gateway, one per payment: opened by the gateway's dispute
 * event, closed `won` or `lost` by its resolution; the evidence sent for it is stamped once.
 */
export const PaymentsDispute = defineEntity({
  name: 'PaymentsDispute',
  tableName: 'payments_disputes',
  properties: {
    paymentId: p.string().length(32).primary(),
    gateway: p.string().length(32),
    /** The gateway's id of the dispute (Stripe dp_…, PayPal PP-D-…); null when only the money's reversal was seen. */
    disputeRef: p.string().length(255).nullable(),
    reason: p.string().length(64),
    status: p.string().length(8).$type<'open' | 'won' | 'lost'>().index(),
    /** Cents of `currency` the payer's bank took back. */
    amount: p.bigint('number'),
    currency: p.string().length(3),
    /** When staff's evidence went to the gateway: set once, by a conditional update. */
    evidenceDate: p.string().length(19).nullable(),
    creationDate: p.string().length(19).index(),
    updateDate: p.string().length(19),
  },
});

/**
 * A player refused further checkouts after a dispute: by account, in-game name, email and (when
 * the owner asks) address. Lifting keeps the row, stamped, for the history.
 */
export const PaymentsBlock = defineEntity({
  name: 'PaymentsBlock',
  tableName: 'payments_blocks',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** 0 for a guest. */
    userId: p.integer().index(),
    /** The account's username or the guest's in-game name, lower-cased. */
    nameKey: p.string().length(64).index(),
    /** Lower-cased; null when none is known. */
    emailKey: p.string().length(255).nullable().index(),
    ip: p.string().length(45).nullable().index(),
    /** The disputed payment that placed it; null for a block staff placed. */
    paymentId: p.string().length(32).nullable().index(),
    reason: p.string().length(255),
    creationDate: p.string().length(19),
    liftedDate: p.string().length(19).nullable(),
    liftedBy: p.string().length(64).nullable(),
  },
});

/**
 * The tax a gateway computed on a payment (Stripe Tax), with the buyer's country as the gateway
 * collected it: what a tax return (the EU's OSS) is made from. Written with the completion, only
 * while tax is on.
 */
export const PaymentsTax = defineEntity({
  name: 'PaymentsTax',
  tableName: 'payments_taxes',
  properties: {
    paymentId: p.string().length(32).primary(),
    /** ISO 3166-1 alpha-2 of the billing address; '' when the gateway gave none. */
    country: p.string().length(2),
    /** Cents of `currency`. */
    amount: p.bigint('number'),
    currency: p.string().length(3),
    /** Included in the price shown (true) or added at checkout. */
    inclusive: p.boolean(),
    /** The buyer's state or province (ISO 3166-2 suffix: CA, QC) when the rate table had one for it; '' otherwise. */
    region: p.string().length(3).default(''),
    /** The country of the buyer's address, from the owner's proxy header (ipCountryHeader): evidence beside `country`; '' when unknown. */
    ipCountry: p.string().length(2).default(''),
    /** The rate applied from the owner's table, in thousandths of a percent (19000 is 19 %); null when the gateway computed it. */
    rate: p.integer().nullable(),
    creationDate: p.string().length(19).index(),
  },
});

/** The owner's tax rates for gateways that compute none (all but Stripe): one per country, and per state or province where it differs. */
export const PaymentsTaxRate = defineEntity({
  name: 'PaymentsTaxRate',
  tableName: 'payments_tax_rates',
  uniques: [{ properties: ['country', 'region'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    /** ISO 3166-1 alpha-2, upper case. */
    country: p.string().length(2),
    /** ISO 3166-2 subdivision suffix (a US state, a Canadian province), upper case; '' for the whole country. */
    region: p.string().length(3),
    /** Thousandths of a percent: 19000 is 19 %, 7125 is 7.125 %. */
    rate: p.integer(),
    updateDate: p.string().length(19),
  },
});

export const entities = [PaymentsPackage, PaymentsPayment, PaymentsEvent, PaymentsCheckout, PaymentsDispute, PaymentsBlock, PaymentsTax, PaymentsTaxRate];
