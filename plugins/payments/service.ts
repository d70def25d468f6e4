/**
 * Payments: checkouts at a gateway, and the gateway's webhooks that complete or reverse them.
 *
 * Exactly once is the database's decision, not ours: each webhook runs in one transaction that
 * locks the payment row first, records the gateway's event id (unique per gateway: a redelivery
 * or a racing copy finds it taken), and moves the payment on only from the state the event
 * expects (`pending` → `completed` → `refunded`/`disputed`). A refund seen before its completion
 * leaves the payment reversed, so the late completion credits nothing. The store order keeps
 * its own unique (payment api, payment id) as a last guard. A direct purchase completes through
 * the store's buy, also from `expired`, or, no longer possible, settles as `credited`, `refunded`
 * or `refund-due` (docs/payments.md).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { countParam, isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { addSeconds, formatMoney, now, requireMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { raw, sql, where } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { Adjustment, PricedLine, PurchaseBuyer, RequestedLine, StoreService } from '../store/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import {
  WEBHOOK_REFUSALS, type GatewayAdapter, type GatewayEvent, type PaymentsService, type PurchaseRequest, type PurchaseStatus, type TopUpPackage,
  type WebhookRequest,
} from './contract.ts';
import { PaymentsCheckout, PaymentsEvent, PaymentsPackage, PaymentsPayment } from './entities.ts';

export type Package = TableRecord<typeof PaymentsPackage>;
export type Payment = TableRecord<typeof PaymentsPayment>;

export interface PackageInput {
  name?: string;
  price?: unknown;
  currency?: string;
  credits?: unknown;
  bonus?: unknown;
}

export interface CheckoutInput {
  userID?: number | string;
  username?: string;
  amount?: unknown;
  packageID?: number | string;
  gateway: string;
  returnURL: string;
  cancelURL: string;
}

/**
 * What a webhook did: `duplicate` (event seen before), `unchanged` (the payment was past that
 * state); for a purchase no longer possible, `credited`, `refunded` or `refund-due`.
 */
export type WebhookResult = 'completed' | 'credited' | 'refund-due' | 'refunded' | 'disputed' | 'reinstated' | 'ignored' | 'duplicate' | 'unchanged';

export interface PaymentsDeps {
  db: Database;
  events: EventBus;
  settings: SettingsService;
  users: UsersService;
  credits: CreditsService;
  store: StoreService;
  log: FastifyBaseLogger;
  /** Largest top-up without a package, in cents. */
  maxAmount: number;
  /** Whether a player without an account may buy directly. */
  guestCheckout: boolean;
  /** Seconds a direct purchase waits for its payment before it expires. */
  purchaseExpirySeconds: number;
  /** A charged-back top-up refunds the balance purchases made since it. */
  chargebackRefundsOrders: boolean;
  /** Seconds a checkout being created at its gateway holds its request's fingerprint at most. */
  checkoutClaimSeconds: number;
}

const P = PaymentsPayment.c;
const C = PaymentsCheckout.c;

/** A guest's in-game name: what the game accepts as a player name. */
const GUEST_NAME = /^[A-Za-z0-9_]{3,16}$/;

/** The most lines and the most units of a line in one purchase, as in a buy (decisions.md §5). */
const MAX_LINES = 100;

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

/** A purchase's lines as sent, checked for shape; the store judges them against the catalogue. */
function requestedLines(lines: unknown): RequestedLine[] {
  if (!Array.isArray(lines) || lines.length === 0) throw new DomainError('VALIDATION_ERROR', 'lines: at least one product is required.');
  if (lines.length > MAX_LINES) throw new DomainError('VALIDATION_ERROR', `lines: at most ${MAX_LINES} lines in one purchase.`);
  return lines.map((line: Partial<Record<keyof PurchaseRequest['lines'][number], unknown>>, i) => {
    const { productId, quantity, variables = {} } = line ?? {};
    if (!Number.isSafeInteger(productId) || (productId as number) < 1) throw new DomainError('PRODUCT_NOT_FOUND',
      `lines[${i}]: no product with ID ${String(productId)}.`);
    if (!Number.isInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_LINES) {
      throw new DomainError('INVALID_QUANTITY', `lines[${i}].quantity must be a whole number from 1 to ${MAX_LINES}.`);
    }
    if (typeof variables !== 'object' || variables === null || Object.values(variables).some((v) => typeof v !== 'string')) {
      throw new DomainError('INVALID_VARIABLE', `lines[${i}].variables must map names to text.`);
    }
    return { productId: productId as number, sentId: String(productId), quantity: quantity as number,
      variables: new Map(Object.entries(variables as Record<string, string>)) };
  });
}

const MAX_CENTS = 100_000_000_00;

/** A purchase's basket as kept with its payment: the lines at the prices offered and the promotions' adjustments. */
interface PricedBasket {
  lines: PricedLine[];
  adjustments: Adjustment[];
}

/** A payment stored before adjustments were kept holds its lines alone. */
function pricedBasket(json: string): PricedBasket {
  const stored = JSON.parse(json) as PricedLine[] | PricedBasket;
  return Array.isArray(stored) ? { lines: stored, adjustments: [] } : stored;
}

function currencyOf(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z]{3}$/.test(value)) throw new DomainError('INVALID_CURRENCY', 'currency must be a three-letter code (ISO 4217).');
  return value.toUpperCase();
}

function centsOf(value: unknown, field: string, min: number): number {
  const cents = requireMoney(value, 'INVALID_AMOUNT', field);
  if (cents < min || cents > MAX_CENTS) throw new DomainError('INVALID_AMOUNT', `${field} must be between ${formatMoney(min)} and ${formatMoney(MAX_CENTS)}.`);
  return cents;
}

function urlOf(value: string, field: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DomainError('INVALID_URL', `${field} must be an absolute http(s) URL.`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new DomainError('INVALID_URL', `${field} must be an absolute http(s) URL.`);
  return url.toString();
}

/**
 * What makes two checkout requests the same one (a form posted twice): everything the payment is
 * made of, as a SHA-256. A basket changed in any way, another price, buyer or gateway is another.
 */
function fingerprintOf(parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** A purchase's lines in one order of their variables, whichever order they came in. */
const linesKey = (lines: RequestedLine[]) => lines.map((l) => [l.productId, l.quantity, [...l.variables].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The event id a rejected webhook claims, for the log line only: it is not trusted for anything. */
function claimedEventId(raw: Buffer): string | undefined {
  try {
    const id = (JSON.parse(raw.toString('utf8')) as { id?: unknown }).id;
    return typeof id === 'string' ? id.slice(0, 255) : undefined;
  } catch {
    return undefined;
  }
}

export class DbPaymentsService implements PaymentsService {
  readonly #deps: PaymentsDeps;
  readonly #gateways = new Map<string, GatewayAdapter>();
  /** Built-in gateways left out for want of secrets, with the reason the checkout error names. */
  readonly #disabled = new Map<string, string>();

  constructor(deps: PaymentsDeps) {
    this.#deps = deps;
  }

  registerGateway(adapter: GatewayAdapter): void {
    if (!/^[a-z0-9-]{1,32}$/.test(adapter.name)) throw new Error(`Payment gateway name "${adapter.name}" must match [a-z0-9-]{1,32}.`);
    if (this.#gateways.has(adapter.name)) throw new Error(`Payment gateway "${adapter.name}" is registered twice.`);
    this.#gateways.set(adapter.name, adapter);
  }

  disableGateway(name: string, reason: string): void {
    this.#disabled.set(name, reason);
    this.#deps.log.info({ gateway: name }, `payment gateway ${name} disabled: ${reason}`);
  }

  /** Every gateway known: the registered ones, and the built-in ones left out with the reason. */
  gateways(): { name: string; reason?: string }[] {
    return [...[...this.#gateways.keys()].map((name) => ({ name })), ...[...this.#disabled].map(([name, reason]) => ({ name, reason }))];
  }

  availableGateways(): string[] {
    return [...this.#gateways.keys()];
  }

  #gateway(name: string): GatewayAdapter {
    const adapter = this.#gateways.get(name);
    if (adapter) return adapter;
    const reason = this.#disabled.get(name);
    throw new DomainError('GATEWAY_UNAVAILABLE', reason ? `The gateway ${name} is disabled: ${reason}.` : `There is no payment gateway ${name}.`);
  }

  // ---- packages

  async packages(): Promise<Package[]> {
    return PaymentsPackage.select(this.#deps.db, sql`order by ${PaymentsPackage.c.price}, ${PaymentsPackage.c.id}`);
  }

  async topUpPackages(): Promise<TopUpPackage[]> {
    return (await this.packages()).map((p) => ({ id: p.id, name: p.name, price: p.price, currency: p.currency, credits: p.credits + p.bonus }));
  }

  async requirePackage(id: number): Promise<Package> {
    const pkg = await PaymentsPackage.find(this.#deps.db, id);
    if (!pkg) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${id}.`);
    return pkg;
  }

  #packageValues(input: PackageInput, old?: Package): Omit<Package, 'id' | 'creationDate'> {
    const name = input.name ?? old?.name;
    if (name === undefined || name.trim() === '') throw new DomainError('VALIDATION_ERROR', 'name is required.');
    return {
      name: name.trim(),
      price: input.price === undefined && old ? old.price : centsOf(input.price, 'price', 1),
      currency: input.currency === undefined ? old?.currency ?? this.#deps.settings.get().currency : currencyOf(input.currency),
      credits: input.credits === undefined && old ? old.credits : centsOf(input.credits, 'credits', 0),
      bonus: input.bonus === undefined ? old?.bonus ?? 0 : centsOf(input.bonus, 'bonus', 0),
    };
  }

  async createPackage(input: PackageInput): Promise<Package> {
    const v = this.#packageValues(input);
    const creationDate = now();
    const id = await PaymentsPackage.insert(this.#deps.db, { ...v, creationDate });
    return { id, ...v, creationDate };
  }

  async updatePackage(id: number, input: PackageInput): Promise<Package> {
    return this.#deps.db.transaction(async () => {
      const old = await this.requirePackage(id);
      const v = this.#packageValues(input, old);
      // Only the fields given are written: the others stay as another admin may have just set them.
      const given = Object.entries(v).filter(([field]) => input[field as keyof PackageInput] !== undefined);
      await PaymentsPackage.update(this.#deps.db, id, Object.fromEntries(given));
      return { ...old, ...v };
    });
  }

  /** Payments already made keep their amounts: they copied them. */
  async deletePackage(id: number): Promise<void> {
    const { affectedRows } = await this.#deps.db.run(sql`delete from ${PaymentsPackage} where ${PaymentsPackage.c.id} = ${id}`);
    if (affectedRows === 0) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${id}.`);
  }

  // ---- checkout

  async #user(input: CheckoutInput): Promise<UserAccount> {
    const { users } = this.#deps;
    if (input.userID !== undefined && input.userID !== '') {
      const id = Number(input.userID);
      if (!Number.isSafeInteger(id) || id < 1) throw new DomainError('USER_NOT_FOUND', `There is no user ${String(input.userID)}.`);
      return users.requireById(id);
    }
    if (input.username) return users.requireByUsername(input.username);
    throw new DomainError('VALIDATION_ERROR', 'userID or username is required.');
  }

  /** USER_NOT_FOUND when there is no such user. */
  async userIdOf(username: string): Promise<number> {
    return (await this.#deps.users.requireByUsername(username)).id;
  }

  async checkout(input: CheckoutInput): Promise<Payment> {
    const adapter = this.#gateway(input.gateway);
    const returnURL = urlOf(input.returnURL, 'returnURL');
    const cancelURL = urlOf(input.cancelURL, 'cancelURL');
    const user = await this.#user(input);
    let what: Pick<Payment, 'packageId' | 'amount' | 'currency' | 'credits' | 'bonus'> & { description: string };
    if (input.packageID !== undefined && input.packageID !== '') {
      const id = Number(input.packageID);
      const pkg = Number.isSafeInteger(id) && id > 0 ? await this.requirePackage(id) : undefined;
      if (!pkg) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${String(input.packageID)}.`);
      what = { packageId: pkg.id, amount: pkg.price, currency: pkg.currency, credits: pkg.credits + pkg.bonus, bonus: pkg.bonus, description: pkg.name };
    } else {
      if (input.amount === undefined || input.amount === '') throw new DomainError('INVALID_AMOUNT', 'amount or packageID is required.');
      const amount = centsOf(input.amount, 'amount', 1);
      if (amount > this.#deps.maxAmount) throw new DomainError('INVALID_AMOUNT', `amount must be at most ${formatMoney(this.#deps.maxAmount)}.`);
      const { currency } = this.#deps.settings.get();
      what = { packageId: null, amount, currency, credits: amount, bonus: 0, description: `${formatMoney(amount)} ${currency} of credits` };
    }
    const fingerprint = fingerprintOf(['top-up', adapter.name, user.id, what.packageId, what.amount, what.currency, returnURL, cancelURL]);
    return this.#open(adapter, { ...what, userId: user.id, guestName: null, purchaseLines: null }, returnURL, cancelURL, fingerprint);
  }

  async startTopUp(request: { gateway: string; userId: number; packageId: number; returnURL: string; cancelURL: string }):
    Promise<{ paymentId: string; checkoutURL: string }> {
    const payment = await this.checkout({ ...request, userID: request.userId, packageID: request.packageId });
    return { paymentId: payment.id, checkoutURL: payment.checkoutUrl };
  }

  /** The buyer of a purchase request: an account, or a guest when guest checkout is on. */
  async #purchaseBuyer(request: Pick<PurchaseRequest, 'userId' | 'guestName'>): Promise<PurchaseBuyer> {
    if (request.userId !== undefined && request.guestName !== undefined) throw new DomainError('VALIDATION_ERROR', 'Send userId or guestName, not both.');
    if (request.userId !== undefined) {
      if (!Number.isSafeInteger(request.userId) || request.userId < 1) throw new DomainError('USER_NOT_FOUND', `There is no user ${String(request.userId)}.`);
      return { userId: (await this.#deps.users.requireById(request.userId)).id };
    }
    if (request.guestName === undefined) throw new DomainError('VALIDATION_ERROR', 'userId or guestName is required.');
    if (!this.#deps.guestCheckout) throw new DomainError('GUEST_CHECKOUT_DISABLED', 'Guest checkout is off: sign in to buy.');
    if (!GUEST_NAME.test(request.guestName)) throw new DomainError('INVALID_GUEST_NAME', 'guestName must be 3 to 16 letters, digits or _.');
    return { guestName: request.guestName };
  }

  async startPurchase(request: PurchaseRequest): Promise<{ paymentId: string; checkoutURL: string; amount: number; currency: string }> {
    const adapter = this.#gateway(request.gateway);
    const returnURL = urlOf(request.returnURL, 'returnURL');
    const cancelURL = urlOf(request.cancelURL, 'cancelURL');
    const buyer = await this.#purchaseBuyer(request);
    const lines = requestedLines(request.lines);
    const quote = await this.#deps.store.quote(buyer, lines, request.codes);
    if (quote.total < 1) throw new DomainError('INVALID_AMOUNT', 'This basket costs nothing: there is nothing to pay at a gateway.');
    if (quote.total > MAX_CENTS) throw new DomainError('INVALID_AMOUNT', `A purchase must cost at most ${formatMoney(MAX_CENTS)}.`);
    const payment = await this.#open(adapter, {
      userId: 'userId' in buyer ? buyer.userId : 0, guestName: 'guestName' in buyer ? buyer.guestName : null, packageId: null,
      amount: quote.total, currency: quote.currency, credits: 0, bonus: 0,
      purchaseLines: JSON.stringify({ lines: quote.lines, adjustments: quote.adjustments } satisfies PricedBasket),
      description: quote.lines.map((l) => `${l.productName} x${l.quantity}`).join(', ').slice(0, 127),
    }, returnURL, cancelURL, fingerprintOf(['purchase', adapter.name,
      // A guest is one browser (its session) as well as a name: two guests typing one name buy apart.
      'userId' in buyer ? buyer.userId : [buyer.guestName, request.codes?.sender?.session ?? null],
      linesKey(lines), request.codes?.coupon?.toLowerCase() ?? null, request.codes?.giftCard?.toLowerCase() ?? null, quote.total, quote.currency,
      returnURL, cancelURL]));
    return { paymentId: payment.id, checkoutURL: payment.checkoutUrl, amount: payment.amount, currency: payment.currency };
  }

  /**
   * A pending payment and its checkout at the gateway; nothing is stored when the gateway refuses.
   * Idempotent by `fingerprint` while the payment is pending and younger than a purchase's expiry:
   * a copy of the request, on any instance, answers the same payment and checkout address, and the
   * gateway is called once. A copy that arrives while the first is still at the gateway waits for it.
   */
  async #open(adapter: GatewayAdapter, what: Pick<Payment,
    'userId' | 'guestName' | 'packageId' | 'amount' | 'currency' | 'credits' | 'bonus' | 'purchaseLines'> & { description: string },
    returnURL: string, cancelURL: string, fingerprint: string): Promise<Payment> {
    for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
      const id = randomBytes(16).toString('hex');
      const claim = await this.#claim(fingerprint, id);
      if (claim === 'ours') return this.#create(adapter, what, returnURL, cancelURL, id, fingerprint);
      if (claim !== 'wait') return claim;
      await sleep(wait);
    }
  }

  /**
   * Claims `fingerprint` for a new payment `id` (`ours`: call the gateway), or finds the pending
   * payment a copy of the request started, or `wait` while that one is still at its gateway.
   */
  async #claim(fingerprint: string, id: string): Promise<'ours' | 'wait' | Payment> {
    const { db, purchaseExpirySeconds, checkoutClaimSeconds } = this.#deps;
    const stamp = now();
    try {
      // In a transaction for its retries: on Galera two nodes' inserts meet at certification, and the loser's retry finds the key taken.
      await db.transaction(() => PaymentsCheckout.insert(db, { fingerprint, paymentId: id, creationDate: stamp }));
      return 'ours';
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    const [held] = await PaymentsCheckout.select(db, sql`where ${C.fingerprint} = ${fingerprint}`);
    // Let go a moment ago (its gateway refused): the next look claims it.
    if (!held) return 'wait';
    const payment = await PaymentsPayment.find(db, held.paymentId);
    if (payment?.status === 'pending' && payment.creationDate >= addSeconds(stamp, -purchaseExpirySeconds)) return payment;
    if (!payment && held.creationDate >= addSeconds(stamp, -checkoutClaimSeconds)) return 'wait';
    // Paid, expired or old, or abandoned at its gateway by an instance that died: this request starts
    // a new checkout, unless another copy took the claim over first.
    const { affectedRows } = await db.transaction(() => db.run(sql`update ${PaymentsCheckout} set ${C.paymentId} = ${id}, ${C.creationDate} = ${stamp}
      where ${C.fingerprint} = ${fingerprint} and ${C.paymentId} = ${held.paymentId}`));
    return affectedRows === 1 ? 'ours' : 'wait';
  }

  /** The gateway's checkout for the claimed payment `id`, and the payment; the claim is let go when either fails. */
  async #create(adapter: GatewayAdapter, what: Pick<Payment,
    'userId' | 'guestName' | 'packageId' | 'amount' | 'currency' | 'credits' | 'bonus' | 'purchaseLines'> & { description: string },
    returnURL: string, cancelURL: string, id: string, fingerprint: string): Promise<Payment> {
    try {
      let session: Awaited<ReturnType<typeof adapter.createCheckout>>;
      try {
        session = await adapter.createCheckout({ paymentId: id, amount: what.amount, currency: what.currency, description: what.description, returnURL,
          cancelURL });
      } catch (err) {
        if (err instanceof DomainError) throw err;
        this.#deps.log.error({ err, gateway: adapter.name, paymentId: id }, 'the gateway refused the checkout');
        throw new DomainError('GATEWAY_ERROR', `The gateway ${adapter.name} did not create the checkout; try again later.`);
      }
      const stamp = now();
      const { description: _, ...values } = what;
      const payment: Payment = {
        ...values, id, gateway: adapter.name, checkoutRef: session.checkoutRef, chargeRef: null, status: 'pending',
        orderId: null, reclaimed: 0, debt: 0, checkoutUrl: session.checkoutURL, creationDate: stamp, updateDate: stamp,
      };
      await PaymentsPayment.insert(this.#deps.db, payment);
      return payment;
    } catch (err) {
      // A copy of the request waiting on the claim then tries the gateway itself. Should this fail
      // too, the error above is the answer, and the claim lapses after checkoutClaimSeconds.
      await this.#deps.db.run(sql`delete from ${PaymentsCheckout} where ${C.fingerprint} = ${fingerprint} and ${C.paymentId} = ${id}`).catch(() => {});
      throw err;
    }
  }

  /** Claims older than any payment they could still answer: their requests are over. */
  async forgetCheckouts(at = now()): Promise<number> {
    const { purchaseExpirySeconds, checkoutClaimSeconds } = this.#deps;
    const { affectedRows } = await this.#deps.db.run(sql`delete from ${PaymentsCheckout}
      where ${C.creationDate} < ${addSeconds(at, -Math.max(purchaseExpirySeconds, checkoutClaimSeconds))}`);
    return affectedRows;
  }

  async purchaseStatus(paymentId: string): Promise<PurchaseStatus> {
    const p = await this.requirePayment(paymentId);
    return {
      paymentId: p.id, kind: p.purchaseLines === null ? 'top-up' : 'purchase', status: p.status, userId: p.userId === 0 ? null : p.userId,
      guestName: p.guestName, amount: p.amount, currency: p.currency, orderId: p.orderId,
    };
  }

  /**
   * Direct purchases nobody paid within the expiry become `expired`, one conditional statement:
   * a webhook holding the row lock finishes first and the row is no longer pending. No stock was
   * reserved, so nothing comes back; a payment that arrives later still completes.
   */
  async expirePending(at = now()): Promise<number> {
    const { affectedRows } = await this.#deps.db.run(sql`update ${PaymentsPayment} set ${P.status} = 'expired', ${P.updateDate} = ${at}
      where ${P.status} = 'pending' and ${P.purchaseLines} is not null and ${P.creationDate} < ${addSeconds(at, -this.#deps.purchaseExpirySeconds)}`);
    return affectedRows;
  }

  async requirePayment(id: string): Promise<Payment> {
    const payment = await PaymentsPayment.find(this.#deps.db, id);
    if (!payment) throw new DomainError('PAYMENT_NOT_FOUND', `There is no payment ${id}.`);
    return payment;
  }

  /**
   * Payments newest first, a page at a time: keyset paging on (creation date, id) after the
   * payment `before`, so a deep page costs what the first one does.
   */
  async list(options: { status?: Payment['status']; before?: string; limit: number }): Promise<Payment[]> {
    const { status, before } = options;
    const [after] = before
      ? await this.#deps.db.query<{ creation_date: string }>(sql`select ${P.creationDate} as creation_date from ${PaymentsPayment} where ${P.id} = ${before}`)
      : [];
    const older = after && sql`(${P.creationDate} < ${after.creation_date} or (${P.creationDate} = ${after.creation_date} and ${P.id} < ${before}))`;
    return PaymentsPayment.select(this.#deps.db,
      sql`${where(status && sql`${P.status} = ${status}`, older)} order by ${P.creationDate} desc, ${P.id} desc limit ${countParam(options.limit)}`);
  }

  /** What needs staff: open disputes, guests' refunds to make by hand, and the players who owe (with how much in all). */
  async trouble(): Promise<{ disputed: number; refundDue: number; debtors: number; debt: number }> {
    const [row] = await this.#deps.db.query<Record<'disputed' | 'refund_due' | 'debtors' | 'debt', number | string | null>>(sql`
      select sum(case when ${P.status} = 'disputed' then 1 else 0 end) as disputed, sum(case when ${P.status} = 'refund-due' then 1 else 0 end) as refund_due,
             sum(case when ${P.debt} > 0 then 1 else 0 end) as debtors, sum(${P.debt}) as debt
      from ${PaymentsPayment} where ${P.status} in ${['disputed', 'refund-due']} or ${P.debt} > 0`);
    return { disputed: Number(row?.disputed ?? 0), refundDue: Number(row?.refund_due ?? 0), debtors: Number(row?.debtors ?? 0), debt: Number(row?.debt ?? 0) };
  }

  /** A player's chargebacks that flag them: payments disputed and not won, or reversed leaving a debt. */
  async chargebacksOf(userId: number): Promise<Payment[]> {
    return PaymentsPayment.select(this.#deps.db,
      sql`where ${P.userId} = ${userId} and (${P.status} = 'disputed' or ${P.debt} > 0) order by ${P.updateDate} desc, ${P.id}`);
  }

  /** Reversed payments whose credits were partly spent: what each player still owes. */
  async debts(): Promise<Payment[]> {
    return PaymentsPayment.select(this.#deps.db, sql`where ${P.debt} > 0 order by ${P.updateDate} desc, ${P.id}`);
  }

  // ---- webhooks

  async webhook(gateway: string, request: WebhookRequest): Promise<WebhookResult> {
    const adapter = this.#gateway(gateway);
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
    if (event.kind === 'ignored') return 'ignored';
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

  async #lockPayment(gateway: string, event: GatewayEvent): Promise<Payment> {
    const { db } = this.#deps;
    const by = [[P.id, event.paymentId], [P.checkoutRef, event.checkoutRef], [P.chargeRef, event.chargeRef]] as const;
    for (const [column, value] of by) {
      if (!value) continue;
      const [payment] = await PaymentsPayment.select(db, sql`where ${P.gateway} = ${gateway} and ${column} = ${value}${raw(db.forUpdate)}`);
      if (payment) return payment;
    }
    throw new DomainError('UNKNOWN_PAYMENT', `Event ${event.eventId} names no payment of ${gateway}.`);
  }

  /** `unfulfillable`: the store refused this completion's purchase in an earlier try: settle its money instead. */
  async #apply(adapter: GatewayAdapter, event: Exclude<GatewayEvent, { kind: 'ignored' }>, unfulfillable?: DomainError): Promise<WebhookResult> {
    const { db } = this.#deps;
    const gateway = adapter.name;
    const payment = await this.#lockPayment(gateway, event);
    if (event.kind === 'completed' && (event.amount !== payment.amount || event.currency.toUpperCase() !== payment.currency)) {
      throw new DomainError('AMOUNT_MISMATCH',
        `Event ${event.eventId} paid ${formatMoney(event.amount)} ${event.currency.toUpperCase()}, the payment asks ${formatMoney(payment.amount)} ` +
          `${payment.currency}.`);
    }
    try {
      await PaymentsEvent.insert(db, { gateway, eventId: event.eventId, paymentId: payment.id, kind: event.kind, creationDate: now() });
    } catch (err) {
      if (isUniqueViolation(err)) return 'duplicate';
      throw err;
    }
    if (event.kind === 'completed') {
      if (payment.purchaseLines === null) return this.#complete(payment, event.chargeRef);
      return unfulfillable ? this.#settleUnfulfillable(adapter, payment, event.chargeRef, unfulfillable) : this.#completePurchase(payment, event.chargeRef);
    }
    // A partial refund leaves the purchase standing; the refund that makes it whole takes the credits back.
    if (event.kind === 'refunded' && event.refundedTotal !== undefined && event.refundedTotal < payment.amount) return 'ignored';
    if (event.kind === 'dispute-won') return this.#disputeWon(payment);
    return this.#reverse(payment, event.kind, event.chargeRef);
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
      username, amount: payment.amount, credit: credits, currency: payment.currency, paymentApi: payment.gateway, paymentId: payment.id,
    });
    return Number(order.id);
  }

  async #settle(payment: Payment, status: 'completed' | 'credited', orderId: number, chargeRef: string | undefined, credits: number): Promise<WebhookResult> {
    await this.#deps.db.run(sql`update ${PaymentsPayment} set ${P.status} = ${status}, ${P.orderId} = ${orderId},
      ${P.chargeRef} = ${chargeRef ?? payment.chargeRef}, ${P.credits} = ${credits}, ${P.updateDate} = ${now()} where ${P.id} = ${payment.id}`);
    await this.#deps.events.emit('payments.completed', {
      paymentId: payment.id, userId: payment.userId, orderId, gateway: payment.gateway, amount: payment.amount, currency: payment.currency, credits,
    });
    return status;
  }

  /** An expired purchase still completes: the money arrived. */
  async #completePurchase(payment: Payment, chargeRef: string | undefined): Promise<WebhookResult> {
    if (payment.status !== 'pending' && payment.status !== 'expired') return 'unchanged';
    let orderId: number;
    try {
      const { lines, adjustments } = pricedBasket(payment.purchaseLines!);
      ({ orderId } = await this.#deps.store.buyPaid(this.#buyerOf(payment), lines, {
        paymentApi: payment.gateway, paymentId: payment.id, currency: payment.currency,
      }, adjustments));
    } catch (err) {
      if (err instanceof DomainError && err.code !== 'CONFLICT') throw new Unfulfillable(err);
      throw err;
    }
    return this.#settle(payment, 'completed', orderId, chargeRef, 0);
  }

  #buyerOf(payment: Payment): PurchaseBuyer {
    return payment.userId === 0 ? { guestName: payment.guestName! } : { userId: payment.userId };
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
    const user = payment.userId === 0 ? undefined : await users.findById(payment.userId);
    if (user) {
      log.warn(why, 'a paid purchase could no longer be made: its money is credited to the buyer\'s balance');
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
      log.warn(why, 'a guest\'s paid purchase could no longer be made: refunded through the gateway');
    } else {
      log.error(why, 'a guest\'s paid purchase could no longer be made and the gateway cannot refund it: refund it by hand');
    }
    await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${status}, ${P.chargeRef} = ${charge}, ${P.updateDate} = ${now()}
      where ${P.id} = ${payment.id}`);
    return status;
  }

  /**
   * A dispute the merchant won: the credits it took back are given back and its debt is cleared,
   * which ends the player's flag. A direct purchase's order stays refunded (its roles and commands
   * were undone); staff sell it again by hand if they wish.
   */
  async #disputeWon(payment: Payment): Promise<WebhookResult> {
    const { db, credits } = this.#deps;
    if (payment.status !== 'disputed' || payment.orderId === null) return 'unchanged';
    if (payment.reclaimed > 0) await credits.change(payment.userId, payment.reclaimed, { reason: 'dispute won', orderId: payment.orderId });
    await db.run(sql`update ${PaymentsPayment} set ${P.status} = 'completed', ${P.reclaimed} = 0, ${P.debt} = 0, ${P.updateDate} = ${now()}
      where ${P.id} = ${payment.id}`);
    return 'reinstated';
  }

  /**
   * Takes the credits back as far as the balance allows; the rest is the player's debt, kept on
   * the payment for the admin (a balance never goes negative).
   */
  async #reverse(payment: Payment, kind: 'refunded' | 'disputed', chargeRef: string | undefined): Promise<WebhookResult> {
    const { db, credits, store, events } = this.#deps;
    if (payment.status === 'pending' || payment.status === 'expired' || payment.status === 'refund-due') {
      // Reversed before we saw it paid, or nothing was given for it: it can no longer complete, so nothing was or will be credited.
      await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${kind}, ${P.chargeRef} = ${chargeRef ?? payment.chargeRef}, ${P.updateDate} = ${now()}
        where ${P.id} = ${payment.id}`);
      return kind;
    }
    if (payment.status !== 'completed' && payment.status !== 'credited') return 'unchanged';
    const orderId = payment.orderId!;
    if (payment.credits > 0 && this.#deps.chargebackRefundsOrders) {
      // Before the credits are taken: what the purchases give back covers the debt first.
      for (const bought of await store.creditOrdersAfter(payment.userId, orderId)) await store.refund(bought);
    }
    // A direct purchase added no credits: its order's refund takes back what it gave (roles, refund commands).
    const reclaimed = payment.credits === 0 ? 0
      : await credits.takeUpTo(payment.userId, payment.credits, { reason: kind === 'refunded' ? 'refund' : 'dispute', orderId });
    const debt = payment.credits - reclaimed;
    await store.markPaymentRefunded(orderId);
    await db.run(sql`update ${PaymentsPayment} set ${P.status} = ${kind}, ${P.reclaimed} = ${reclaimed}, ${P.debt} = ${debt}, ${P.updateDate} = ${now()}
      where ${P.id} = ${payment.id}`);
    await events.emit('payments.reversed', {
      paymentId: payment.id, userId: payment.userId, orderId, gateway: payment.gateway, kind, reclaimed, debt,
    });
    return kind;
  }
}
