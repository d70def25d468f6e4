/**
 * What a plugin package imports: its values are the host's own (./host.ts), its types the host's
 * declarations, built with this package. Plugins declare the range of this package they were built
 * against as a peer dependency; the host refuses at boot one built for a range it does not satisfy.
 */
import type * as Core from '../../../core/index.ts';
import type * as TypeBox from '@sinclair/typebox';
import { host } from './host.ts';

/** This SDK's version (the host's) and the range of it plugins built with this SDK declare. */
export const sdkVersion: string = host.sdkVersion;
export const sdkRange: string = host.sdkRange;

export const {
  defineFeature,
  createServiceRef,
  DomainError,
  defineMigration,
  isUniqueViolation,
  settingsRef,
  OutboundRefused,
  sql,
  join,
  raw,
  empty,
  where,
  Sql,
  fields,
  count,
  sum,
  typed,
  defineEntity,
  joined,
  p,
  everyRound,
  RoundLog,
  errorsFor,
  field,
  S,
  PERMANENT,
  formatMoney,
  moneyNumber,
  parseMoney,
  requireMoney,
  toTimestamp,
  now,
  addSeconds,
  parseTimestamp,
  displayTimestamp,
  parseClientTimestamp,
  isTimeZone,
  hasControlCharacter,
  compareCodeUnits,
}: Omit<typeof Core, 'buildApp' | 'registerErrorCodes' | 'ServiceRegistry' | 'EventBus' | 'Database' | 'OutboundPolicy'> = host;
export type DomainError = Core.DomainError;
export type OutboundRefused = Core.OutboundRefused;
export type Sql = Core.Sql;
export type RoundLog = Core.RoundLog;

/** TypeBox's builder, the host's copy: route and option schemas. */
export const Type: typeof TypeBox.Type = host.Type;
export type { Static, TSchema, TObject } from '@sinclair/typebox';
export type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export type {
  AppConfig,
  ConsoleAccess,
  ConsoleBlock,
  ConsoleField,
  ConsolePage,
  ConsolePages,
  ConsoleRequest,
  ConsoleResult,
  ConsoleSection,
  Database,
  Dialect,
  EventBus,
  EventMap,
  EventName,
  FeatureArchive,
  FeatureContext,
  FeatureDefinition,
  MigrationDef,
  OutboundPolicy,
  ServiceRef,
  ServiceRegistry,
  SettingsService,
  SettingValues,
  SiteSetting,
  SiteSettings,
  TableRecord,
} from '../../../core/index.ts';

// The built-in features' service refs (the registry matches a ref by its id) and their contracts' types.
import type * as Auth from '../../../plugins/auth/contract.ts';
import type * as Bazaar from '../../../plugins/bazaar/contract.ts';
import type * as ChatIntegration from '../../../plugins/chat-integration/contract.ts';
import type * as Credits from '../../../plugins/credits/contract.ts';
import type * as Delivery from '../../../plugins/delivery/contract.ts';
import type * as Donations from '../../../plugins/donations/contract.ts';
import type * as Email from '../../../plugins/email/contract.ts';
import type * as Notifications from '../../../plugins/notifications/contract.ts';
import type * as Payments from '../../../plugins/payments/contract.ts';
import type * as Promotions from '../../../plugins/promotions/contract.ts';
import type * as Store from '../../../plugins/store/contract.ts';
import type * as Storefront from '../../../plugins/storefront/contract.ts';
import type * as Support from '../../../plugins/support/contract.ts';
import type * as Users from '../../../plugins/users/contract.ts';
import type * as Votes from '../../../plugins/votes/contract.ts';
export type {
  Auth,
  Bazaar,
  ChatIntegration,
  Credits,
  Delivery,
  Donations,
  Email,
  Notifications,
  Payments,
  Promotions,
  Store,
  Storefront,
  Support,
  Users,
  Votes,
};

const ref = createServiceRef;
export const authRef: typeof Auth.authRef = ref('auth');
export const bazaarRef: typeof Bazaar.bazaarRef = ref('bazaar');
export const chatIntegrationRef: typeof ChatIntegration.chatIntegrationRef = ref('chat-integration');
export const creditsRef: typeof Credits.creditsRef = ref('credits');
export const deliveryRef: typeof Delivery.deliveryRef = ref('delivery');
export const donationsRef: typeof Donations.donationsRef = ref('donations');
export const emailRef: typeof Email.emailRef = ref('email');
export const notificationsRef: typeof Notifications.notificationsRef = ref('notifications');
export const paymentsRef: typeof Payments.paymentsRef = ref('payments');
export const promotionsRef: typeof Promotions.promotionsRef = ref('promotions');
export const storeRef: typeof Store.storeRef = ref('store');
export const catalogueRef: typeof Store.catalogueRef = ref('store.catalogue');
export const checkoutRef: typeof Store.checkoutRef = ref('store.checkout');
export const ordersRef: typeof Store.ordersRef = ref('store.orders');
export const storefrontRef: typeof Storefront.storefrontRef = ref('storefront');
export const supportRef: typeof Support.supportRef = ref('support');
export const usersRef: typeof Users.usersRef = ref('users');
export const votesRef: typeof Votes.votesRef = ref('votes');
