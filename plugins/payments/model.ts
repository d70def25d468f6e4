/** What the parts of the payments service share: their rows, inputs, dependencies and value checks. */
import type { FastifyBaseLogger } from 'fastify';
import type { AuditLog } from '../../core/audit.ts';
import type { ServiceRegistry } from '../../core/registry.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { formatMoney, requireMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { TableRecord } from '../../core/table.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { Adjustment, PricedLine, StoreCheckout, StoreOrders } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { SubscriptionEventResult } from './contract.ts';
import type { PaymentsPackage, PaymentsPayment } from './entities.ts';

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
  /** The request's address, for a block naming addresses. */
  ip?: string;
  billingCountry?: string;
  billingRegion?: string;
  headers?: Record<string, string | string[] | undefined>;
}

/**
 * What a webhook did: `duplicate` (event seen before), `unchanged` (the payment was past that
 * state); for a purchase no longer possible, `credited`, `refunded` or `refund-due`; a dispute closed
 * `reinstated` when won (its credits given back), `lost` when lost.
 */
export type WebhookResult =
  | 'completed'
  | 'credited'
  | 'refund-due'
  | 'refunded'
  | 'disputed'
  | 'reinstated'
  | 'lost'
  | 'ignored'
  | 'duplicate'
  | 'unchanged'
  | SubscriptionEventResult;

export interface PaymentsDeps {
  db: Database;
  events: EventBus;
  settings: SettingsService;
  users: UsersService;
  credits: CreditsService;
  store: StoreCheckout & StoreOrders;
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
  audit: AuditLog;
  /** Optional peers, looked up at use time: delivery and auth for a dispute's evidence. */
  services: ServiceRegistry;
  /** A dispute's block names the account's address too (a shared address blocks everyone behind it). */
  blockAddresses: boolean;
  /** The request header the owner's proxy puts the country of the buyer's address in (CF-IPCountry); '' for none. */
  ipCountryHeader: string;
}

export const MAX_CENTS = 100_000_000_00;

/** A purchase's basket as kept with its payment: the lines at the prices offered and the promotions' adjustments. */
export interface PricedBasket {
  lines: PricedLine[];
  adjustments: Adjustment[];
}

/** A payment stored before adjustments were kept holds its lines alone. */
export function pricedBasket(json: string): PricedBasket {
  const stored = JSON.parse(json) as PricedLine[] | PricedBasket;
  return Array.isArray(stored) ? { lines: stored, adjustments: [] } : stored;
}

export function currencyOf(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z]{3}$/.test(value)) throw new DomainError('INVALID_CURRENCY', 'currency must be a three-letter code (ISO 4217).');
  return value.toUpperCase();
}

export function centsOf(value: unknown, field: string, min: number): number {
  const cents = requireMoney(value, 'INVALID_AMOUNT', field);
  if (cents < min || cents > MAX_CENTS) throw new DomainError('INVALID_AMOUNT', `${field} must be between ${formatMoney(min)} and ${formatMoney(MAX_CENTS)}.`);
  return cents;
}
