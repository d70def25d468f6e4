/**
 * Checkout start: a top-up or a direct purchase becomes a pending payment and a checkout at its
 * gateway. A request sent twice (a form posted again, on any instance) claims its fingerprint in
 * payments_checkouts first, so the gateway is called once and the copy answers the same payment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isUniqueViolation } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, formatMoney, now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { PurchaseBuyer, RequestedLine } from '../store/contract.ts';
import type { UserAccount } from '../users/contract.ts';
import type { Blocks } from './blocks.ts';
import { refuseOverLimit } from './limits.ts';
import { taxAsked } from './tax.ts';
import { type BillingPlace, grossOf, type TaxRates } from './tax-rates.ts';
import type { GatewayAdapter, PurchaseRequest, TaxFacts } from './contract.ts';
import { PaymentsCheckout, PaymentsPayment } from './entities.ts';
import type { Gateways } from './gateways.ts';
import { centsOf, type CheckoutInput, MAX_CENTS, type Payment, type PaymentsDeps, type PricedBasket } from './model.ts';
import type { Packages } from './packages.ts';

const C = PaymentsCheckout.c;

/** A guest's in-game name: what the game accepts as a player name. */
const GUEST_NAME = /^[A-Za-z0-9_]{3,16}$/;
/** A guest's email: one @ between non-blank parts, a dot in the domain, as registration checks it. */
const GUEST_EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The most lines and the most units of a line in one purchase, as in a buy (decisions.md §5). */
const MAX_LINES = 100;

/** What a new payment is for, as its checkout starts. */
type Opening = Pick<
  Payment,
  'userId' | 'guestName' | 'guestEmail' | 'packageId' | 'amount' | 'currency' | 'credits' | 'bonus' | 'purchaseLines' | 'taxFacts'
> & {
  description: string;
};

/** A purchase's lines as sent, checked for shape; the store judges them against the catalogue. */
function requestedLines(lines: unknown): RequestedLine[] {
  if (!Array.isArray(lines) || lines.length === 0) throw new DomainError('VALIDATION_ERROR', 'lines: at least one product is required.');
  if (lines.length > MAX_LINES) throw new DomainError('VALIDATION_ERROR', `lines: at most ${MAX_LINES} lines in one purchase.`);
  return lines.map((line: Partial<Record<keyof PurchaseRequest['lines'][number], unknown>>, i) => {
    const { productId, quantity, variables = {} } = line ?? {};
    if (!Number.isSafeInteger(productId) || (productId as number) < 1)
      throw new DomainError('PRODUCT_NOT_FOUND', `lines[${i}]: no product with ID ${String(productId)}.`);
    if (!Number.isInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_LINES) {
      throw new DomainError('INVALID_QUANTITY', `lines[${i}].quantity must be a whole number from 1 to ${MAX_LINES}.`);
    }
    if (typeof variables !== 'object' || variables === null || Object.values(variables).some((v) => typeof v !== 'string')) {
      throw new DomainError('INVALID_VARIABLE', `lines[${i}].variables must map names to text.`);
    }
    return {
      productId: productId as number,
      sentId: String(productId),
      quantity: quantity as number,
      variables: new Map(Object.entries(variables as Record<string, string>)),
    };
  });
}

export function urlOf(value: string, field: string): string {
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

export class Checkouts {
  readonly #deps: PaymentsDeps;
  readonly #gateways: Gateways;
  readonly #packages: Packages;

  readonly #blocks: Blocks;
  readonly #rates: TaxRates;

  constructor(deps: PaymentsDeps, gateways: Gateways, packages: Packages, blocks: Blocks, rates: TaxRates) {
    this.#deps = deps;
    this.#gateways = gateways;
    this.#packages = packages;
    this.#blocks = blocks;
    this.#rates = rates;
  }

  /** The owner's table's tax on `amount`, as JSON, for a gateway that computes none while tax is on; null (and no statement) otherwise. */
  async #tableTax(adapter: GatewayAdapter, amount: number, place: BillingPlace): Promise<string | null> {
    const mode = this.#deps.settings.get().taxMode;
    if (mode === 'off' || adapter.computesTax) return null;
    return JSON.stringify(await this.#rates.quote(amount, mode === 'inclusive', place, this.#deps.ipCountryHeader));
  }

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

  /** A top-up: a package, or an amount of the site currency as as many credits. */
  async topUp(input: CheckoutInput): Promise<Payment> {
    const adapter = this.#gateways.require(input.gateway);
    if (adapter.test)
      throw new DomainError('GATEWAY_UNAVAILABLE', `The gateway ${adapter.name} takes store purchases only: a top-up would add credits nobody paid for.`);
    const returnURL = urlOf(input.returnURL, 'returnURL');
    const cancelURL = urlOf(input.cancelURL, 'cancelURL');
    const user = await this.#user(input);
    await this.#blocks.refuse({ userId: user.id, account: user, ip: input.ip });
    let what: Pick<Payment, 'packageId' | 'amount' | 'currency' | 'credits' | 'bonus'> & { description: string };
    if (input.packageID !== undefined && input.packageID !== '') {
      const id = Number(input.packageID);
      const pkg = Number.isSafeInteger(id) && id > 0 ? await this.#packages.require(id) : undefined;
      if (!pkg) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${String(input.packageID)}.`);
      what = { packageId: pkg.id, amount: pkg.price, currency: pkg.currency, credits: pkg.credits + pkg.bonus, bonus: pkg.bonus, description: pkg.name };
    } else {
      if (input.amount === undefined || input.amount === '') throw new DomainError('INVALID_AMOUNT', 'amount or packageID is required.');
      const amount = centsOf(input.amount, 'amount', 1);
      if (amount > this.#deps.maxAmount) throw new DomainError('INVALID_AMOUNT', `amount must be at most ${formatMoney(this.#deps.maxAmount)}.`);
      const { currency } = this.#deps.settings.get();
      what = { packageId: null, amount, currency, credits: amount, bonus: 0, description: `${formatMoney(amount)} ${currency} of credits` };
    }
    await refuseOverLimit(this.#deps, user, what.amount);
    const taxFacts = await this.#tableTax(adapter, what.amount, input);
    const fingerprint = fingerprintOf(['top-up', adapter.name, user.id, what.packageId, what.amount, what.currency, returnURL, cancelURL, taxFacts]);
    return this.#open(
      adapter,
      { ...what, userId: user.id, guestName: null, guestEmail: null, purchaseLines: null, taxFacts },
      returnURL,
      cancelURL,
      fingerprint,
    );
  }

  /** The buyer of a purchase request: an account (with the account as read, which the later checks use), or a guest when guest checkout is on. */
  async #purchaseBuyer(request: Pick<PurchaseRequest, 'userId' | 'guestName' | 'guestEmail'>): Promise<PurchaseBuyer & { account?: UserAccount }> {
    if (request.userId !== undefined && request.guestName !== undefined) throw new DomainError('VALIDATION_ERROR', 'Send userId or guestName, not both.');
    if (request.userId !== undefined) {
      if (!Number.isSafeInteger(request.userId) || request.userId < 1) throw new DomainError('USER_NOT_FOUND', `There is no user ${String(request.userId)}.`);
      const account = await this.#deps.users.requireById(request.userId);
      return { userId: account.id, account };
    }
    if (request.guestName === undefined) throw new DomainError('VALIDATION_ERROR', 'userId or guestName is required.');
    if (!this.#deps.guestCheckout) throw new DomainError('GUEST_CHECKOUT_DISABLED', 'Guest checkout is off: sign in to buy.');
    if (!GUEST_NAME.test(request.guestName)) throw new DomainError('INVALID_GUEST_NAME', 'guestName must be 3 to 16 letters, digits or _.');
    const guestEmail = this.#guestEmail(request.guestEmail);
    return guestEmail ? { guestName: request.guestName, guestEmail } : { guestName: request.guestName };
  }

  /** A guest's email as the site setting guestEmail asks: required, optional (blank is none), or off (ignored). */
  #guestEmail(sent: string | undefined): string | undefined {
    const asked = this.#deps.settings.get().guestEmail;
    const email = sent?.trim() ?? '';
    if (asked === 'off') return undefined;
    if (!email && asked === 'optional') return undefined;
    if (email.length > 191 || !GUEST_EMAIL.test(email)) {
      throw new DomainError(
        'INVALID_GUEST_EMAIL',
        email ? 'guestEmail must be an email address, like name@example.org.' : 'guestEmail is required: the receipt is sent there.',
      );
    }
    return email;
  }

  /** A direct purchase: the basket priced by the store's quote, paid at the gateway, bought when the payment completes. */
  async purchase(request: PurchaseRequest): Promise<Payment> {
    const adapter = this.#gateways.require(request.gateway);
    const returnURL = urlOf(request.returnURL, 'returnURL');
    const cancelURL = urlOf(request.cancelURL, 'cancelURL');
    const { account, ...buyer } = await this.#purchaseBuyer(request);
    await this.#blocks.refuse({ ...buyer, account, ip: request.ip });
    const lines = requestedLines(request.lines);
    const quote = await this.#deps.store.quote(buyer, lines, request.codes);
    if (quote.total < 1) throw new DomainError('INVALID_AMOUNT', 'This basket costs nothing: there is nothing to pay at a gateway.');
    if (quote.total > MAX_CENTS) throw new DomainError('INVALID_AMOUNT', `A purchase must cost at most ${formatMoney(MAX_CENTS)}.`);
    if (account) await refuseOverLimit(this.#deps, account, quote.total);
    const taxFacts = await this.#tableTax(adapter, quote.total, request);
    return this.#open(
      adapter,
      {
        userId: 'userId' in buyer ? buyer.userId : 0,
        guestName: 'guestName' in buyer ? buyer.guestName : null,
        guestEmail: ('guestEmail' in buyer && buyer.guestEmail) || null,
        packageId: null,
        amount: quote.total,
        currency: quote.currency,
        credits: 0,
        bonus: 0,
        purchaseLines: JSON.stringify({ lines: quote.lines, adjustments: quote.adjustments } satisfies PricedBasket),
        taxFacts,
        description: quote.lines
          .map((l) => `${l.productName} x${l.quantity}`)
          .join(', ')
          .slice(0, 127),
      },
      returnURL,
      cancelURL,
      fingerprintOf([
        'purchase',
        adapter.name,
        // A guest is one browser (its session) as well as a name: two guests typing one name buy apart.
        'userId' in buyer ? buyer.userId : [buyer.guestName, buyer.guestEmail ?? null, request.codes?.sender?.session ?? null],
        linesKey(lines),
        request.codes?.coupon?.toLowerCase() ?? null,
        request.codes?.giftCard?.toLowerCase() ?? null,
        quote.total,
        quote.currency,
        returnURL,
        cancelURL,
        taxFacts,
      ]),
    );
  }

  /**
   * A pending payment and its checkout at the gateway; nothing is stored when the gateway refuses.
   * Idempotent by `fingerprint` while the payment is pending and younger than a purchase's expiry:
   * a copy of the request, on any instance, answers the same payment and checkout address, and the
   * gateway is called once. A copy that arrives while the first is still at the gateway waits for it.
   */
  async #open(adapter: GatewayAdapter, what: Opening, returnURL: string, cancelURL: string, fingerprint: string): Promise<Payment> {
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
    const { affectedRows } = await db.transaction(() =>
      db.run(sql`update ${PaymentsCheckout} set ${C.paymentId} = ${id}, ${C.creationDate} = ${stamp}
      where ${C.fingerprint} = ${fingerprint} and ${C.paymentId} = ${held.paymentId}`),
    );
    return affectedRows === 1 ? 'ours' : 'wait';
  }

  /** The gateway's checkout for the claimed payment `id`, and the payment; the claim is let go when either fails. */
  async #create(adapter: GatewayAdapter, what: Opening, returnURL: string, cancelURL: string, id: string, fingerprint: string): Promise<Payment> {
    try {
      let session: Awaited<ReturnType<typeof adapter.createCheckout>>;
      const tax = what.taxFacts === null ? undefined : (JSON.parse(what.taxFacts) as TaxFacts);
      try {
        session = await adapter.createCheckout({
          paymentId: id,
          amount: grossOf(what.amount, tax),
          currency: what.currency,
          description: what.description,
          returnURL,
          cancelURL,
          tax: adapter.computesTax ? taxAsked(this.#deps.settings.get().taxMode) : undefined,
          taxAmount: tax?.amount,
          threeDSecure: this.#deps.settings.get().stripeThreeDSecure || undefined,
        });
      } catch (err) {
        if (err instanceof DomainError) throw err;
        this.#deps.log.error({ err, gateway: adapter.name, paymentId: id }, 'the gateway refused the checkout');
        throw new DomainError('GATEWAY_ERROR', `The gateway ${adapter.name} did not create the checkout; try again later.`);
      }
      const stamp = now();
      const { description: _, ...values } = what;
      const payment: Payment = {
        ...values,
        id,
        gateway: adapter.name,
        checkoutRef: session.checkoutRef,
        chargeRef: null,
        status: 'pending',
        orderId: null,
        reclaimed: 0,
        debt: 0,
        checkoutUrl: session.checkoutURL,
        creationDate: stamp,
        updateDate: stamp,
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
  async forget(at = now()): Promise<number> {
    const { purchaseExpirySeconds, checkoutClaimSeconds } = this.#deps;
    const { affectedRows } = await this.#deps.db.run(sql`delete from ${PaymentsCheckout}
      where ${C.creationDate} < ${addSeconds(at, -Math.max(purchaseExpirySeconds, checkoutClaimSeconds))}`);
    return affectedRows;
  }
}
