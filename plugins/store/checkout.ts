/**
 * The store's checkout: what a unit costs (the product's own price, or a participant's sale
 * price), the buy's checks (products for sale, variables, purchase rules, a first look at the
 * stock), and the two buys, from the balance and with real money, which place their order the one
 * same way (#place): the order and its lines, the participants' part, the payment, the roles,
 * `store.order.completed`, the stock last. Each buy is one transaction.
 */
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { hasControlCharacter, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { fields, sql } from '../../core/sql.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { DbCatalogue } from './catalogue.ts';
import type {
  Adjustment,
  BuyLine,
  BuyParticipant,
  BuyResult,
  Checkout,
  OrderItemEvent,
  PricedLine,
  PricedProduct,
  Product,
  PromotionCodes,
  PurchaseBuyer,
  PurchaseRules,
  Quote,
  RequestedLine,
  StoreCheckout,
} from './contract.ts';
import { effectivePrice } from './contract.ts';
import { StoreOrder, StoreOrderAdjustment, StoreOrderItem, StoreProduct } from './entities.ts';
import { insertOrder, orderCompleted, type Buyer, type Order } from './orders.ts';

const P = StoreProduct.c;
const o = StoreOrder.as('o');
const oi = StoreOrderItem.as('oi');

interface CheckedLine {
  product: Product;
  rules: PurchaseRules;
  quantity: number;
  variables: BuyLine['variables'];
  /** Cents a unit costs before its discount: the list price (for a paid buy, the one offered). */
  unitPrice: number;
  /** Cents a unit costs after its discount. */
  unitTotal: number;
}

/** How a buy's order is paid, the one thing in which the two buys' orders differ. */
interface Payment<T> {
  /** The order's fields that say how it is paid, from its amounts. */
  fields(amounts: { total: number }): Pick<Order, 'type' | 'earnings' | 'cashback' | 'credit' | 'currency' | 'paymentApi' | 'paymentId' | 'test'>;
  /** Inside the transaction, once the order, its lines and the participants' part are written: moves the money it takes. */
  settle(order: Order): Promise<T>;
}

const MAX_VARIABLE_LENGTH = 255;

/**
 * The variables of one line against what the product declares: every required one present, every
 * value allowed and free of control characters (a value may be rendered into a game command).
 */
function checkVariables(line: RequestedLine, product: Product): BuyLine['variables'] {
  const fail = (why: string) => new DomainError('INVALID_VARIABLE', `Invalid variable for product ${product.id}: ${why}.`);
  const declared = new Map(product.variables.map((v) => [v.name, v]));
  for (const name of line.variables.keys()) {
    if (!declared.has(name)) throw fail(`it has no variable "${name}"`);
  }
  const chosen: BuyLine['variables'] = [];
  for (const v of product.variables) {
    const sent = line.variables.get(v.name) ?? '';
    if (hasControlCharacter(sent)) throw fail(`"${v.name}" holds a line break or another control character`);
    const value = sent.trim();
    if (value === '') {
      if (v.required) throw fail(`"${v.name}" is required`);
      continue;
    }
    if (v.values.length ? !v.values.includes(value) : value.length > MAX_VARIABLE_LENGTH) {
      throw fail(v.values.length ? `"${v.name}" must be one of ${v.values.join(', ')}` : `"${v.name}" is longer than ${MAX_VARIABLE_LENGTH} characters`);
    }
    chosen.push({ name: v.name, value });
  }
  return chosen;
}

function outOfStock(productId: number): DomainError {
  return new DomainError('OUT_OF_STOCK', `Product ${productId} is out of stock.`);
}

/** `percent` of `cents`, rounded down, in integers only (the percent is kept to hundredths). */
function percentOf(cents: number, percent: number): number {
  return Math.floor((cents * Math.round(percent * 100)) / 10_000);
}

const sum = (adjustments: Adjustment[]) => adjustments.reduce((total, a) => total + a.amount, 0);

/**
 * An order's amounts: the list prices (`subtotal`), what was taken off them (the products' own
 * discounts, sales, coupons: `discount`) and what is paid (`total`, a gift card's share left out).
 */
function amounts(
  lines: { unitPrice: number; unitTotal: number; quantity: number }[],
  adjustments: Adjustment[],
): { subtotal: number; discount: number; total: number } {
  const subtotal = lines.reduce((total, l) => total + l.unitPrice * l.quantity, 0);
  const priced = lines.reduce((total, l) => total + l.unitTotal * l.quantity, 0);
  const lowered = sum(adjustments.filter((a) => !a.paid));
  return { subtotal, discount: subtotal - priced + lowered, total: priced - sum(adjustments) };
}

export class DbCheckout implements StoreCheckout {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #settings: SettingsService;
  readonly #users: UsersService;
  readonly #credits: CreditsService;
  readonly #catalogue: DbCatalogue;
  readonly #participants: BuyParticipant[] = [];

  constructor(deps: { db: Database; events: EventBus; settings: SettingsService; users: UsersService; credits: CreditsService; catalogue: DbCatalogue }) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#settings = deps.settings;
    this.#users = deps.users;
    this.#credits = deps.credits;
    this.#catalogue = deps.catalogue;
  }

  // ---- prices

  addParticipant(participant: BuyParticipant): void {
    this.#participants.push(participant);
  }

  /** The lower of the product's own price and any sale's: a sale never raises a price already discounted lower. */
  unitPrice(p: PricedProduct, at: string): number {
    let price = effectivePrice(p, at);
    for (const participant of this.#participants) {
      const sale = participant.salePrice(p, at);
      if (sale !== undefined && sale < price) price = sale;
    }
    return price;
  }

  /** The basket as the participants see it, priced at `at`. */
  #checkout(user: Buyer, lines: CheckedLine[], codes: PromotionCodes, at: string): Checkout {
    return {
      userId: user.id,
      username: user.username,
      codes,
      lines: lines.map((l) => ({
        productId: l.product.id,
        categoryId: l.product.categoryId,
        quantity: l.quantity,
        unitPrice: l.product.price,
        ownPrice: effectivePrice(l.product, at),
        unitTotal: l.unitTotal,
      })),
      total: lines.reduce((sum, l) => sum + l.unitTotal * l.quantity, 0),
    };
  }

  /** What the codes take off the basket (nothing asked when no code was sent): each participant prices what the ones before it left. */
  async #adjustments(checkout: Checkout): Promise<Adjustment[]> {
    const adjustments: Adjustment[] = [];
    if (!checkout.codes.coupon && !checkout.codes.giftCard) return adjustments;
    for (const participant of this.#participants) {
      const taken = await participant.price({ ...checkout, total: checkout.total - sum(adjustments) });
      adjustments.push(...taken);
    }
    return adjustments;
  }

  /** `fn`, a buy or quote judging `codes`, within each participant's `judging` (a limit on guessing codes). */
  #judged<T>(codes: PromotionCodes, buyer: PurchaseBuyer, fn: () => Promise<T>): Promise<T> {
    if (!codes.coupon && !codes.giftCard) return fn();
    return this.#participants.reduce<() => Promise<T>>((inner, a) => (a.judging ? () => a.judging!(codes, buyer, inner) : inner), fn)();
  }

  // ---- the buy's checks

  /**
   * The buy's checks, before it writes: the products for sale, the variables, the purchase rules,
   * a first look at the stock. The lines come back with the price each unit costs now.
   */
  async #checked(user: Buyer, requested: RequestedLine[]): Promise<CheckedLine[]> {
    const forSale = await this.#catalogue.forSale(requested.map((l) => l.productId));
    const at = now();
    const lines = requested.map((line) => {
      const found = forSale.get(line.productId);
      if (!found) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${line.sentId}.`);
      const { product, rules } = found;
      return {
        product,
        rules,
        quantity: line.quantity,
        variables: checkVariables(line, product),
        unitPrice: product.price,
        unitTotal: this.unitPrice(product, at),
      };
    });
    await this.#checkRules(user, lines);

    // A first look at the stock as read, lock-free: most refusals end here. The binding take is
    // the last step (#takeStock).
    const wanted = new Map<number, number>();
    for (const l of lines) wanted.set(l.product.id, (wanted.get(l.product.id) ?? 0) + l.quantity);
    for (const { product } of lines) {
      if (product.stock !== -1 && wanted.get(product.id)! > product.stock) throw outOfStock(product.id);
    }
    return lines;
  }

  /** The buy's checks of the purchase rules, inside its transaction: each refusal names the product. */
  async #checkRules(user: Buyer, lines: { product: Product; rules: PurchaseRules }[]): Promise<void> {
    for (const { product, rules } of lines) {
      // A guest has no account to hold a role, a linked account or an earlier purchase.
      if (user.id === 0 && (product.giveRoleId > 0 || rules.requiredProductId > 0 || rules.requireLinkedAccount)) {
        throw new DomainError('ACCOUNT_REQUIRED', `${product.name} (product ${product.id}) can be bought only with an account.`);
      }
      if (rules.requiredProductId > 0) {
        const [bought] = await this.#db.query(sql`select ${o.c.id} from ${o} join ${oi} on ${oi.c.orderId} = ${o.c.id}
           where ${o.c.accountId} = ${user.id} and ${o.c.status} = 'completed' and ${oi.c.productId} = ${rules.requiredProductId} limit 1`);
        if (!bought) {
          const required = (await this.#catalogue.productsById([rules.requiredProductId], false)).get(rules.requiredProductId);
          throw new DomainError(
            'REQUIRED_PRODUCT',
            `${product.name} (product ${product.id}) requires buying ${required?.name ?? `product ${rules.requiredProductId}`} first.`,
          );
        }
      }
      if (rules.requireLinkedAccount && !user.linkedAccounts.chat) {
        throw new DomainError('REQUIRED_LINKED_ACCOUNT', `${product.name} (product ${product.id}) requires a linked chat account.`);
      }
      if (rules.preventDowngrade && product.giveRoleId > 0) await this.#checkDowngrade(user, product);
    }
  }

  /** Refuses a rank below one the buyer holds from a product of the same category. */
  async #checkDowngrade(user: Buyer, product: Product): Promise<void> {
    const role = await this.#users.getRole(product.giveRoleId);
    if (!role) return;
    const ranks = await this.#db.query(
      sql`select distinct ${fields({ give_role_id: P.giveRoleId })}
        from ${StoreProduct} where ${P.categoryId} = ${product.categoryId} and ${P.giveRoleId} > 0`,
    );
    const sameCategory = new Set(ranks.map((r) => Number(r.give_role_id)));
    const higher = (await this.#users.rolesOf(user.id)).find((r) => sameCategory.has(r.id) && r.priority > role.priority);
    if (higher) {
      throw new DomainError('DOWNGRADE_NOT_ALLOWED', `${product.name} (product ${product.id}) would be a downgrade: you hold ${higher.name}.`);
    }
  }

  // ---- the buys

  /**
   * The buy: check the user, products, variables and stock, write the order, debit the balance,
   * grant roles, credit the cashback, take the stock. Any failure rolls all of it back.
   */
  async buy(userId: number, requested: RequestedLine[], keyName?: string, codes: PromotionCodes = {}): Promise<BuyResult> {
    return this.#judged(codes, { userId }, () =>
      this.#db.transaction(async () => {
        const user = await this.#users.requireById(userId);
        const lines = await this.#checked(user, requested);
        const at = now();
        const checkout = this.#checkout(user, lines, codes, at);
        const adjustments = await this.#adjustments(checkout);
        const settings = this.#settings.get();
        const { order, settled: balance } = await this.#place(user, lines, checkout, adjustments, at, {
          fields: ({ total }) => {
            const cashback = percentOf(total, settings.cashbackPercent);
            return {
              type: 'credit',
              earnings: 0,
              cashback,
              credit: cashback,
              currency: settings.currency,
              paymentApi: 'credits',
              paymentId: null,
              test: false,
            };
          },
          settle: (placed) => this.#pay(placed, keyName),
        });
        return {
          orderId: order.id,
          balance,
          subtotal: order.subtotal,
          discount: order.discount,
          total: order.total,
          cashback: order.cashback,
          lines: lines.map((l) => ({ productId: l.product.id, quantity: l.quantity, variables: l.variables })),
        };
      }),
    );
  }

  async quote(buyer: PurchaseBuyer, requested: RequestedLine[], codes: PromotionCodes = {}): Promise<Quote> {
    const user = await this.#buyer(buyer);
    const lines = await this.#checked(user, requested);
    const adjustments = await this.#judged(codes, buyer, () => this.#adjustments(this.#checkout(user, lines, codes, now())));
    const priced = lines.map((l) => ({
      productId: l.product.id,
      productName: l.product.name,
      quantity: l.quantity,
      variables: Object.fromEntries(l.variables.map((v) => [v.name, v.value])),
      unitPrice: l.unitPrice,
      unitTotal: l.unitTotal,
    }));
    const { subtotal, total } = amounts(priced, adjustments);
    return { lines: priced, currency: this.#settings.get().currency, subtotal, total, adjustments };
  }

  /**
   * The buy paid with real money: the same checks, roles, event and stock as `buy`, at the prices
   * the buyer was offered (and paid), no balance moved; the order is of type `payment` and records
   * the gateway's payment, unique, so a second completion of one payment is a CONFLICT.
   */
  async buyPaid(
    buyer: PurchaseBuyer,
    offered: PricedLine[],
    payment: { paymentApi: string; paymentId: string; currency: string; test?: boolean },
    adjustments: Adjustment[] = [],
  ): Promise<{ orderId: number }> {
    return this.#db.transaction(async () => {
      const user = await this.#buyer(buyer);
      const checked = await this.#checked(
        user,
        offered.map((l) => ({
          productId: l.productId,
          sentId: String(l.productId),
          quantity: l.quantity,
          variables: new Map(Object.entries(l.variables)),
        })),
      );
      // At the prices the buyer was offered and paid, not today's.
      const lines = checked.map((l, i) => ({ ...l, unitPrice: offered[i]!.unitPrice, unitTotal: offered[i]!.unitTotal }));
      const at = now();
      const { order } = await this.#place(user, lines, this.#checkout(user, lines, {}, at), adjustments, at, {
        fields: ({ total }) => ({
          type: 'payment',
          earnings: total,
          cashback: 0,
          credit: 0,
          currency: payment.currency,
          paymentApi: payment.paymentApi,
          paymentId: payment.paymentId,
          test: payment.test === true,
        }),
        settle: () => Promise.resolve(),
      });
      return { orderId: order.id };
    });
  }

  /**
   * The one way both buys place their order, inside their transaction: the order and its lines,
   * the adjustments, the payment, the roles, `store.order.completed` (its listeners, delivery's
   * commands, run here), then each participant's part (`take`) and the stock last.
   */
  async #place<T>(
    user: Buyer,
    lines: CheckedLine[],
    checkout: Checkout,
    adjustments: Adjustment[],
    at: string,
    payment: Payment<T>,
  ): Promise<{ order: Order; settled: T }> {
    const figures = amounts(lines, adjustments);
    const guest = user.id === 0;
    const order = await insertOrder(this.#db, {
      accountId: user.id,
      status: 'completed',
      ...figures,
      ...payment.fields(figures),
      guestName: guest ? user.username : null,
      guestKey: guest ? user.username.toLowerCase() : null,
      guestEmail: guest ? (user.email ?? null) : null,
      creationDate: at,
    });
    const items = await this.#insertItems(order.id, lines);
    if (adjustments.length > 0)
      await StoreOrderAdjustment.insertMany(
        this.#db,
        adjustments.map((a) => ({ orderId: order.id, ...a })),
      );
    const settled = await payment.settle(order);
    if (!guest) await this.#grantRoles(user.id, lines);
    // The order's listeners (delivery queues its commands) run in this transaction before the
    // participants' parts and the stock, so the rows every buyer shares (a coupon's count of uses,
    // a product's stock) are locked for the last statements only: on MySQL each statement after a
    // lock is a round trip the other buyers of that coupon or product wait out.
    await orderCompleted(this.#events, order, user, items);
    for (const participant of this.#participants) await participant.take(checkout, order.id, adjustments);
    await this.#takeStock(lines);
    return { order, settled };
  }

  /** Every line in one statement; the lines as the order's event carries them. */
  async #insertItems(orderId: number, lines: CheckedLine[]): Promise<OrderItemEvent[]> {
    const items = lines.map((l) => ({
      productId: l.product.id,
      productName: l.product.name,
      quantity: l.quantity,
      variables: Object.fromEntries(l.variables.map((v) => [v.name, v.value])),
    }));
    await StoreOrderItem.insertMany(
      this.#db,
      lines.map((l, i) => ({
        orderId,
        productId: l.product.id,
        productName: l.product.name,
        quantity: l.quantity,
        unitPrice: l.unitPrice,
        unitTotal: l.unitTotal,
        variables: JSON.stringify(items[i]!.variables),
      })),
    );
    return items;
  }

  /** The price from the balance, then the cashback onto it: the balance after both. */
  async #pay(order: Order, keyName?: string): Promise<number> {
    const { accountId: userId, id: orderId } = order;
    let balance = order.total > 0 ? await this.#debit(userId, order.total, orderId, keyName) : undefined;
    if (order.cashback > 0) balance = await this.#credits.change(userId, order.cashback, { reason: 'cashback', orderId, keyName });
    return balance ?? this.#credits.balance(userId);
  }

  /** Too low a balance is the store's INSUFFICIENT_BALANCE (api.md), not the credits feature's code. */
  async #debit(userId: number, cents: number, orderId: number, keyName?: string): Promise<number> {
    try {
      return await this.#credits.change(userId, -cents, { reason: 'purchase', orderId, keyName });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'NOT_ENOUGH_CREDITS') throw new DomainError('INSUFFICIENT_BALANCE', err.message);
      throw err;
    }
  }

  async #grantRoles(userId: number, lines: CheckedLine[]): Promise<void> {
    for (const l of lines) {
      if (l.product.giveRoleId <= 0 || l.product.duration < 0) continue;
      // Several units of a timed role add up; a permanent one stays permanent.
      try {
        await this.#users.extendRole(userId, l.product.giveRoleId, l.product.duration * l.quantity);
      } catch (err) {
        // A product saved before its role became privileged: refused, and the rollback undoes the payment.
        if (err instanceof DomainError && err.code === 'FORBIDDEN')
          throw new DomainError('FORBIDDEN', `${l.product.name} (product ${l.product.id}) is not for sale: ${err.message}`);
        throw err;
      }
    }
  }

  /** The account, or a guest: no account (id 0), the name typed at checkout, no linked accounts. */
  async #buyer(buyer: PurchaseBuyer): Promise<Buyer> {
    if ('userId' in buyer) return this.#users.requireById(buyer.userId);
    return { id: 0, username: buyer.guestName, linkedAccounts: {}, email: buyer.guestEmail ?? null };
  }

  /**
   * Takes the stock with conditional updates: the row lock makes the check and the take one step,
   * so concurrent buyers never sell more than there is. Last in the buy, because a product's row
   * is the one lock all its buyers share: it is held only from here to the commit. Rows are taken
   * in product id order, so two buyers of the same products queue instead of deadlocking.
   */
  async #takeStock(lines: { product: Product; quantity: number }[]): Promise<void> {
    for (const line of [...lines].sort((a, b) => a.product.id - b.product.id)) {
      if (line.product.stock === -1) continue;
      const { affectedRows } = await this.#db.run(
        sql`update ${StoreProduct} set ${P.stock} = ${P.stock} - ${line.quantity} where ${P.id} = ${line.product.id} and ${P.stock} >= ${line.quantity}`,
      );
      if (affectedRows === 0) throw outOfStock(line.product.id);
    }
  }
}
