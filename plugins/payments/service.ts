/**
 * Payments: checkouts at a gateway, and the gateway's webhooks that complete or reverse them. The
 * service is the one face peers, routes and the console see; its parts live beside it by concern:
 * the gateway adapters registry (gateways.ts), top-up packages (packages.ts), checkout start
 * (checkout.ts), webhook-event recording and completion (webhooks.ts, where exactly once is
 * explained), and refunds and reversals (reversals.ts). Listing and reporting are here.
 */
import { countParam } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now } from '../../core/format.ts';
import { fields, sql, sum, where } from '../../core/sql.ts';
import { Blocks } from './blocks.ts';
import { Checkouts } from './checkout.ts';
import type {
  CheckoutSession,
  GatewayAdapter,
  OrderTax,
  PaymentsService,
  PurchaseRequest,
  StartedPurchase,
  PurchaseStatus,
  SubscriptionCheckoutRequest,
  SubscriptionEventResult,
  SubscriptionChangeRequest,
  SubscriptionGatewayEvent,
  TopUpPackage,
  WebhookRequest,
} from './contract.ts';
import { Disputes } from './disputes.ts';
import { PaymentsCheckout, PaymentsEvent, PaymentsPayment } from './entities.ts';
import { Evidence } from './evidence.ts';
import { Gateways } from './gateways.ts';
import type { CheckoutInput, Package, PackageInput, Payment, PaymentsDeps, WebhookResult } from './model.ts';
import { Packages } from './packages.ts';
import { SubscriptionCheckouts } from './subscription-checkout.ts';
import { orderTax, storedTax } from './tax.ts';
import { grossOf, TaxRates } from './tax-rates.ts';
import { Webhooks } from './webhooks.ts';

export type { CheckoutInput, Package, PackageInput, Payment, PaymentsDeps, WebhookResult } from './model.ts';

const P = PaymentsPayment.c;

export class DbPaymentsService implements PaymentsService {
  readonly #deps: PaymentsDeps;
  readonly #gateways: Gateways;
  readonly #packages: Packages;
  readonly #checkouts: Checkouts;
  readonly #webhooks: Webhooks;
  readonly #subscriptions: SubscriptionCheckouts;
  /** The block list disputes fill and checkouts read (blocks.ts). */
  readonly blocks: Blocks;
  /** Disputes' records (disputes.ts). */
  readonly disputes: Disputes;
  /** A dispute's evidence, gathered and sent once (evidence.ts). */
  readonly evidence: Evidence;
  /** The owner's tax rates for gateways that compute no tax (tax-rates.ts). */
  readonly taxRates: TaxRates;

  constructor(deps: PaymentsDeps) {
    this.#deps = deps;
    this.#gateways = new Gateways(deps.log, deps.settings);
    this.#packages = new Packages(deps.db, deps.settings, deps.audit);
    this.blocks = new Blocks(deps);
    this.disputes = new Disputes(deps, this.blocks);
    this.evidence = new Evidence(deps, this.disputes, this.#gateways);
    this.taxRates = new TaxRates(deps.db, deps.audit);
    this.#checkouts = new Checkouts(deps, this.#gateways, this.#packages, this.blocks, this.taxRates);
    this.#webhooks = new Webhooks(deps, this.#gateways, this.disputes);
    this.#subscriptions = new SubscriptionCheckouts(deps.log, this.#gateways, this.blocks);
  }

  // ---- gateways

  registerGateway(adapter: GatewayAdapter): void {
    this.#gateways.register(adapter);
  }

  disableGateway(name: string, reason: string): void {
    this.#gateways.disable(name, reason);
  }

  /** Every gateway known: the registered ones, and the built-in ones left out with the reason. */
  gateways(): { name: string; reason?: string }[] {
    return this.#gateways.all();
  }

  availableGateways(): string[] {
    return this.#gateways.available();
  }

  // ---- packages

  async packages(): Promise<Package[]> {
    return this.#packages.all();
  }

  async topUpPackages(): Promise<TopUpPackage[]> {
    return this.#packages.topUpPackages();
  }

  async requirePackage(id: number): Promise<Package> {
    return this.#packages.require(id);
  }

  async createPackage(input: PackageInput): Promise<Package> {
    return this.#packages.create(input);
  }

  async updatePackage(id: number, input: PackageInput): Promise<Package> {
    return this.#packages.update(id, input);
  }

  async deletePackage(id: number): Promise<void> {
    return this.#packages.delete(id);
  }

  // ---- checkout

  /** USER_NOT_FOUND when there is no such user. */
  async userIdOf(username: string): Promise<number> {
    return (await this.#deps.users.requireByUsername(username)).id;
  }

  async checkout(input: CheckoutInput): Promise<Payment> {
    return this.#checkouts.topUp(input);
  }

  async startTopUp(request: {
    gateway: string;
    userId: number;
    packageId: number;
    returnURL: string;
    cancelURL: string;
  }): Promise<{ paymentId: string; checkoutURL: string }> {
    const payment = await this.checkout({ ...request, userID: request.userId, packageID: request.packageId });
    return { paymentId: payment.id, checkoutURL: payment.checkoutUrl };
  }

  async startPurchase(request: PurchaseRequest): Promise<StartedPurchase> {
    const payment = await this.#checkouts.purchase(request);
    const tax = storedTax(payment);
    return { paymentId: payment.id, checkoutURL: payment.checkoutUrl, amount: payment.amount, currency: payment.currency, ...(tax ? { tax } : {}) };
  }

  /** Claims older than any payment they could still answer: their requests are over. */
  async forgetCheckouts(at = now()): Promise<number> {
    return this.#checkouts.forget(at);
  }

  // ---- subscriptions paid at a gateway (subscription-checkout.ts)

  startSubscription(gateway: string, request: SubscriptionCheckoutRequest): Promise<CheckoutSession> {
    return this.#subscriptions.start(gateway, request);
  }

  cancelSubscription(gateway: string, request: { subscriptionRef: string; atPeriodEnd: boolean }): Promise<void> {
    return this.#subscriptions.cancel(gateway, request);
  }

  changeSubscription(gateway: string, request: SubscriptionChangeRequest): Promise<void> {
    return this.#subscriptions.change(gateway, request);
  }

  onSubscriptionEvent(handler: (gateway: string, event: SubscriptionGatewayEvent) => Promise<SubscriptionEventResult>): void {
    this.#webhooks.onSubscriptionEvent(handler);
  }

  // ---- webhooks

  async webhook(gateway: string, request: WebhookRequest): Promise<WebhookResult> {
    return this.#webhooks.receive(gateway, request);
  }

  // ---- test mode (test-gateway.ts)

  /** A payment of a test gateway; PAYMENT_NOT_FOUND for any other, so its page pays nothing real. */
  async requireTestPayment(id: string): Promise<Payment> {
    const payment = await this.requirePayment(id);
    if (!this.#gateways.testNames().includes(payment.gateway)) throw new DomainError('PAYMENT_NOT_FOUND', `There is no test payment ${id}.`);
    return payment;
  }

  /** The test checkout paid: completed exactly once as its webhook would be; GATEWAY_UNAVAILABLE while test mode is off. */
  async payTest(id: string): Promise<{ payment: Payment; result: WebhookResult }> {
    const payment = await this.requireTestPayment(id);
    const result = await this.#webhooks.apply(this.#gateways.require(payment.gateway), {
      eventId: `test-paid-${payment.id}`,
      kind: 'completed',
      paymentId: payment.id,
      checkoutRef: payment.checkoutRef,
      chargeRef: `test-${payment.id}`,
      // What its buyer would have paid: the owner's tax on top when it is added at checkout.
      amount: grossOf(payment.amount, storedTax(payment)),
      currency: payment.currency,
    });
    return { payment, result };
  }

  /** Deletes the test orders (the store's) and the test gateways' payments, in one transaction. */
  async clearTests(): Promise<{ orders: number; payments: number }> {
    const { db, store } = this.#deps;
    const names = this.#gateways.testNames();
    return db.transaction(async () => {
      const orders = await store.clearTestOrders();
      await this.#deps.audit.record({
        action: 'payments.test.clear',
        target: { type: 'order', id: 0 },
        summary: `Cleared ${orders} test orders and their payments`,
      });
      if (names.length === 0) return { orders, payments: 0 };
      const tests = sql`select ${P.id} from ${PaymentsPayment} where ${P.gateway} in ${names}`;
      await db.run(sql`delete from ${PaymentsCheckout} where ${PaymentsCheckout.c.paymentId} in (${tests})`);
      await db.run(sql`delete from ${PaymentsEvent} where ${PaymentsEvent.c.gateway} in ${names}`);
      const { affectedRows } = await db.run(sql`delete from ${PaymentsPayment} where ${P.gateway} in ${names}`);
      return { orders, payments: affectedRows };
    });
  }

  // ---- payments: status, expiry, lists and what needs staff

  async purchaseStatus(paymentId: string): Promise<PurchaseStatus> {
    const p = await this.requirePayment(paymentId);
    return {
      paymentId: p.id,
      kind: p.purchaseLines === null ? 'top-up' : 'purchase',
      status: p.status,
      userId: p.userId === 0 ? null : p.userId,
      guestName: p.guestName,
      amount: p.amount,
      currency: p.currency,
      orderId: p.orderId,
      test: this.#gateways.testNames().includes(p.gateway),
    };
  }

  async orderTax(orderId: number): Promise<OrderTax | undefined> {
    return orderTax(this.#deps.db, orderId, this.#deps.settings.get().sellerTaxNumber);
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
      ? await this.#deps.db.query(sql`select ${fields({ creation_date: P.creationDate })} from ${PaymentsPayment} where ${P.id} = ${before}`)
      : [];
    const older = after && sql`(${P.creationDate} < ${after.creation_date} or (${P.creationDate} = ${after.creation_date} and ${P.id} < ${before}))`;
    return PaymentsPayment.select(
      this.#deps.db,
      sql`${where(status && sql`${P.status} = ${status}`, older)} order by ${P.creationDate} desc, ${P.id} desc limit ${countParam(options.limit)}`,
    );
  }

  /** What needs staff: open disputes, guests' refunds to make by hand, and the players who owe (with how much in all). */
  async trouble(): Promise<{ disputed: number; refundDue: number; debtors: number; debt: number }> {
    const [row] = await this.#deps.db.query(sql`
      select ${fields({
        disputed: sum(sql`case when ${P.status} = 'disputed' then 1 else 0 end`),
        refund_due: sum(sql`case when ${P.status} = 'refund-due' then 1 else 0 end`),
        debtors: sum(sql`case when ${P.debt} > 0 then 1 else 0 end`),
        debt: sum(P.debt),
      })}
      from ${PaymentsPayment} where ${P.status} in ${['disputed', 'refund-due']} or ${P.debt} > 0`);
    return { disputed: Number(row?.disputed ?? 0), refundDue: Number(row?.refund_due ?? 0), debtors: Number(row?.debtors ?? 0), debt: Number(row?.debt ?? 0) };
  }

  /** A player's chargebacks that flag them: payments disputed and not won, or reversed leaving a debt. */
  async chargebacksOf(userId: number): Promise<Payment[]> {
    return PaymentsPayment.select(
      this.#deps.db,
      sql`where ${P.userId} = ${userId} and (${P.status} = 'disputed' or ${P.debt} > 0) order by ${P.updateDate} desc, ${P.id}`,
    );
  }

  /** Reversed payments whose credits were partly spent: what each player still owes. */
  async debts(): Promise<Payment[]> {
    return PaymentsPayment.select(this.#deps.db, sql`where ${P.debt} > 0 order by ${P.updateDate} desc, ${P.id}`);
  }
}
