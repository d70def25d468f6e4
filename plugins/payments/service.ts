/**
 * Payments: checkouts at a gateway, and the gateway's webhooks that complete or reverse them.
 *
 * Exactly once is the database's decision, not ours: each webhook runs in one transaction that
 * locks the payment row first, records the gateway's event id (unique per gateway: a redelivery
 * or a racing copy finds it taken), and moves the payment on only from the state the event
 * expects (`pending` → `completed` → `refunded`/`disputed`). A refund seen before its completion
 * leaves the payment reversed, so the late completion credits nothing. The store order keeps
 * its own unique (payment api, payment id) as a last guard.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { formatMoney, now, requireMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { StoreService } from '../store/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import { WEBHOOK_REFUSALS, type GatewayAdapter, type GatewayEvent, type PaymentsService, type WebhookRequest } from './contract.ts';
import { PaymentsEvent, PaymentsPackage, PaymentsPayment } from './entities.ts';

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

/** What a webhook did: `duplicate` (event seen before), `unchanged` (the payment was past that state). */
export type WebhookResult = 'completed' | 'refunded' | 'disputed' | 'ignored' | 'duplicate' | 'unchanged';

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
}

const MAX_CENTS = 100_000_000_00;

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

  #gateway(name: string): GatewayAdapter {
    const adapter = this.#gateways.get(name);
    if (adapter) return adapter;
    const reason = this.#disabled.get(name);
    throw new DomainError('GATEWAY_UNAVAILABLE', reason ? `The gateway ${name} is disabled: ${reason}.` : `There is no payment gateway ${name}.`);
  }

  // ---- packages

  async packages(): Promise<Package[]> {
    return PaymentsPackage.select(this.#deps.db, 'order by price, id');
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
      await PaymentsPackage.update(this.#deps.db, id, v);
      return { ...old, ...v };
    });
  }

  /** Payments already made keep their amounts: they copied them. */
  async deletePackage(id: number): Promise<void> {
    const { affectedRows } = await this.#deps.db.run('delete from payments_packages where id = ?', [id]);
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

  async checkout(input: CheckoutInput): Promise<Payment> {
    const adapter = this.#gateway(input.gateway);
    const returnURL = urlOf(input.returnURL, 'returnURL');
    const cancelURL = urlOf(input.cancelURL, 'cancelURL');
    const user = await this.#user(input);
    let what: { packageId: number | null; amount: number; currency: string; credits: number; bonus: number; description: string };
    if (input.packageID !== undefined && input.packageID !== '') {
      const id = Number(input.packageID);
      const pkg = Number.isSafeInteger(id) && id > 0 ? await this.requirePackage(id) : undefined;
      if (!pkg) throw new DomainError('PACKAGE_NOT_FOUND', `There is no package ${String(input.packageID)}.`);
      what = { packageId: pkg.id, amount: pkg.price, currency: pkg.currency, credits: pkg.credits, bonus: pkg.bonus, description: pkg.name };
    } else {
      if (input.amount === undefined || input.amount === '') throw new DomainError('INVALID_AMOUNT', 'amount or packageID is required.');
      const amount = centsOf(input.amount, 'amount', 1);
      if (amount > this.#deps.maxAmount) throw new DomainError('INVALID_AMOUNT', `amount must be at most ${formatMoney(this.#deps.maxAmount)}.`);
      const { currency } = this.#deps.settings.get();
      what = { packageId: null, amount, currency, credits: amount, bonus: 0, description: `${formatMoney(amount)} ${currency} of credits` };
    }
    const id = randomBytes(16).toString('hex');
    let session;
    try {
      session = await adapter.createCheckout({ paymentId: id, amount: what.amount, currency: what.currency, description: what.description, returnURL, cancelURL });
    } catch (err) {
      if (err instanceof DomainError) throw err;
      this.#deps.log.error({ err, gateway: adapter.name, paymentId: id }, 'the gateway refused the checkout');
      throw new DomainError('GATEWAY_ERROR', `The gateway ${adapter.name} did not create the checkout; try again later.`);
    }
    const stamp = now();
    const payment: Payment = {
      id, userId: user.id, gateway: adapter.name, checkoutRef: session.checkoutRef, chargeRef: null, packageId: what.packageId,
      amount: what.amount, currency: what.currency, credits: what.credits + what.bonus, bonus: what.bonus, status: 'pending',
      orderId: null, reclaimed: 0, debt: 0, checkoutUrl: session.checkoutURL, creationDate: stamp, updateDate: stamp,
    };
    await PaymentsPayment.insert(this.#deps.db, payment);
    return payment;
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
    const where: string[] = [];
    const params: unknown[] = [];
    if (options.status) {
      where.push('status = ?');
      params.push(options.status);
    }
    if (options.before) {
      const [after] = await this.#deps.db.query<{ creation_date: string }>('select creation_date from payments_payments where id = ?', [options.before]);
      if (after) {
        where.push('(creation_date < ? or (creation_date = ? and id < ?))');
        params.push(after.creation_date, after.creation_date, options.before);
      }
    }
    return PaymentsPayment.select(this.#deps.db,
      `${where.length ? `where ${where.join(' and ')} ` : ''}order by creation_date desc, id desc limit ?`, [...params, options.limit]);
  }

  /** Reversed payments whose credits were partly spent: what each player still owes. */
  async debts(): Promise<Payment[]> {
    return PaymentsPayment.select(this.#deps.db, 'where debt > 0 order by update_date desc, id');
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
      const result = await this.#deps.db.transaction(() => this.#apply(gateway, event));
      this.#deps.log.info({ gateway, eventId: event.eventId, kind: event.kind, result }, 'webhook processed');
      return result;
    } catch (err) {
      if (err instanceof DomainError) this.#deps.log.warn({ gateway, eventId: event.eventId, code: err.code }, 'webhook refused');
      throw err;
    }
  }

  async #lockPayment(gateway: string, event: GatewayEvent): Promise<Payment> {
    const { db } = this.#deps;
    const by: [string, string | undefined][] = [['id', event.paymentId], ['checkout_ref', event.checkoutRef], ['charge_ref', event.chargeRef]];
    for (const [column, value] of by) {
      if (!value) continue;
      const [payment] = await PaymentsPayment.select(db, `where gateway = ? and ${column} = ?${db.forUpdate}`, [gateway, value]);
      if (payment) return payment;
    }
    throw new DomainError('UNKNOWN_PAYMENT', `Event ${event.eventId} names no payment of ${gateway}.`);
  }

  async #apply(gateway: string, event: Exclude<GatewayEvent, { kind: 'ignored' }>): Promise<WebhookResult> {
    const { db } = this.#deps;
    const payment = await this.#lockPayment(gateway, event);
    if (event.kind === 'completed' && (event.amount !== payment.amount || event.currency.toUpperCase() !== payment.currency)) {
      throw new DomainError('AMOUNT_MISMATCH',
        `Event ${event.eventId} paid ${formatMoney(event.amount)} ${event.currency.toUpperCase()}, the payment asks ${formatMoney(payment.amount)} ${payment.currency}.`);
    }
    try {
      await PaymentsEvent.insert(db, { gateway, eventId: event.eventId, paymentId: payment.id, kind: event.kind, creationDate: now() });
    } catch (err) {
      if (isUniqueViolation(err)) return 'duplicate';
      throw err;
    }
    if (event.kind === 'completed') return this.#complete(payment, event.chargeRef);
    // A partial refund leaves the purchase standing; the refund that makes it whole takes the credits back.
    if (event.kind === 'refunded' && event.refundedTotal !== undefined && event.refundedTotal < payment.amount) return 'ignored';
    return this.#reverse(payment, event.kind, event.chargeRef);
  }

  async #complete(payment: Payment, chargeRef: string | undefined): Promise<WebhookResult> {
    const { db, users, store, events } = this.#deps;
    if (payment.status !== 'pending') return 'unchanged';
    const user = await users.requireById(payment.userId);
    const order = await store.recordPayment({
      username: user.username, amount: payment.amount, credit: payment.credits, currency: payment.currency,
      paymentApi: payment.gateway, paymentId: payment.id,
    });
    const orderId = Number(order.id);
    await db.run("update payments_payments set status = 'completed', order_id = ?, charge_ref = ?, update_date = ? where id = ?",
      [orderId, chargeRef ?? payment.chargeRef, now(), payment.id]);
    await events.emit('payments.completed', {
      paymentId: payment.id, userId: payment.userId, orderId, gateway: payment.gateway, amount: payment.amount,
      currency: payment.currency, credits: payment.credits,
    });
    return 'completed';
  }

  /**
   * Takes the credits back as far as the balance allows; the rest is the player's debt, kept on
   * the payment for the admin (a balance never goes negative).
   */
  async #reverse(payment: Payment, kind: 'refunded' | 'disputed', chargeRef: string | undefined): Promise<WebhookResult> {
    const { db, credits, store, events } = this.#deps;
    if (payment.status === 'pending') {
      // Reversed before we saw it paid: it can no longer complete, so nothing was or will be credited.
      await db.run('update payments_payments set status = ?, charge_ref = ?, update_date = ? where id = ?',
        [kind, chargeRef ?? payment.chargeRef, now(), payment.id]);
      return kind;
    }
    if (payment.status !== 'completed') return 'unchanged';
    const orderId = payment.orderId!;
    const reclaimed = await credits.takeUpTo(payment.userId, payment.credits, { reason: kind === 'refunded' ? 'refund' : 'dispute', orderId });
    const debt = payment.credits - reclaimed;
    await store.markPaymentRefunded(orderId);
    await db.run('update payments_payments set status = ?, reclaimed = ?, debt = ?, update_date = ? where id = ?',
      [kind, reclaimed, debt, now(), payment.id]);
    await events.emit('payments.reversed', {
      paymentId: payment.id, userId: payment.userId, orderId, gateway: payment.gateway, kind, reclaimed, debt,
    });
    return kind;
  }
}
