/** The store feature's contract: a user's orders, and real-money payment orders for the payments feature. */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';
import { dateStr, moneyStr, str, strOrNull } from '../../core/schemas.ts';

/** An order as the API shows it (money already formatted `"12.50"`, time in the site's zone). */
export const OrderRow = Type.Object({
  id: str(undefined, '310'), accountID: str(undefined, '7'), coupon: strOrNull(undefined, null),
  total: moneyStr('decimal: what was paid'), discount: str('decimal', '0.00'), subtotal: moneyStr(), earnings: str('decimal: real money received', '0.00'),
  cashback: str('decimal', '0.25'), credit: str('decimal: credits given', '0.25'),
  type: str('credit (paid from the balance) or payment (real money)', 'credit'), status: str('completed or refunded', 'completed'),
  paymentAPI: str('credits, or the gateway of a payment', 'credits'), paymentID: str('empty for credit orders', ''), creationDate: dateStr(),
});
export type OrderRow = typeof OrderRow.static;

export interface StoreService {
  /** A user's orders, newest first. */
  ordersOf(userId: number): Promise<OrderRow[]>;
  /**
   * Records a real-money payment as `POST /api/admin/payments` does, in the caller's transaction:
   * a `payment` order, its credits (ledger reason `payment`) and `store.order.completed` (the
   * donation entry). Amounts in cents. CONFLICT when paymentApi + paymentId is recorded already.
   */
  recordPayment(payment: PaymentOrderInput): Promise<OrderRow>;
  /** A completed `payment` order becomes `refunded`; false when there is no such order. */
  markPaymentRefunded(orderId: number): Promise<boolean>;
  /** A product's name, active or not; undefined when there is no such product. */
  productName(productId: number): Promise<string | undefined>;
  /**
   * The user's latest completed balance purchase of a product that grants `roleId`, with only
   * those lines: what a role's expiry undoes.
   */
  lastPurchaseGranting(userId: number, roleId: number): Promise<{ orderId: number; items: OrderItemEvent[] } | undefined>;
}

/** A real-money payment with its values checked, in cents. */
export interface PaymentOrderInput {
  username: string;
  amount: number;
  /** Credits added to the balance. */
  credit: number;
  currency: string;
  /** The gateway (`manual` when an admin records it). */
  paymentApi: string;
  /** The gateway's id of the payment; null when there is none. */
  paymentId: string | null;
  /** Name of the API key that recorded it, for the ledger. */
  keyName?: string;
}

/** One line of an order as its event carries it. */
export interface OrderItemEvent {
  productId: number;
  productName: string;
  quantity: number;
  /** The variables the buyer chose, by name. */
  variables: Record<string, string>;
}

export const storeRef = createServiceRef<StoreService>('store');

declare module '../../core/events.ts' {
  interface EventMap {
    /**
     * Emitted inside the order's transaction (`onCommitting` listeners commit or roll back with it).
     * `type` `credit`: a purchase paid from the balance; `payment`: real money (an admin's record or a gateway's webhook).
     */
    'store.order.completed': {
      orderId: number;
      userId: number;
      /** As registered, at the time of the order. */
      username: string;
      /** The buyer's linked accounts (platform → id) as the order read them, so listeners need not read the user again. */
      linkedAccounts: Record<string, string>;
      type: 'credit' | 'payment';
      /** In cents: the price paid (credit) or the money received (payment). */
      total: number;
      currency: string;
      /** Stored UTC timestamp of the order. */
      creationDate: string;
      /** What was bought (empty for a payment). */
      items: OrderItemEvent[];
    };
    /** Emitted inside the refund's transaction: the order is `refunded` once this commits. */
    'store.order.refunded': {
      orderId: number;
      userId: number;
      username: string;
      linkedAccounts: Record<string, string>;
      items: OrderItemEvent[];
    };
  }
}

/** The store's site settings (its definition declares them). */
export const storeSettings = {
  cashbackPercent: {
    schema: Type.Number({ minimum: 0, maximum: 100, default: 0, examples: [5] }),
    label: 'Cashback (%)', hint: 'Credits given back on each purchase, 0 to 100.',
  },
  /** 200 by default, the only success the official game plugin accepts (docs/clients.md); api.md says 201. */
  buyResponseStatus: { schema: Type.Union([Type.Literal(200), Type.Literal(201)], { default: 200 }), label: 'Status of a successful buy' },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof storeSettings> {}
}
