/** The host's public surface: what a feature (built-in or third-party) imports. */
export { defineFeature, type FeatureDefinition } from './features.ts';
export type { FeatureArchive } from './archive/feature-archive.ts';
export type { FeatureContext } from './feature-context.ts';
export {
  errorsFor,
  field,
  type ConsoleAccess,
  type ConsoleBlock,
  type ConsoleField,
  type ConsolePage,
  type ConsolePages,
  type ConsoleRequest,
  type ConsoleResult,
  type ConsoleSection,
} from './console.ts';
export { createServiceRef, ServiceRegistry, type ServiceRef } from './registry.ts';
export { EventBus, type EventMap, type EventName } from './events.ts';
export { DomainError, registerErrorCodes } from './errors.ts';
export { everyRound, RoundLog } from './background.ts';
export { defineMigration, isUniqueViolation, Database, type Dialect, type MigrationDef } from './db.ts';
export { settingsRef, type SettingsService } from './settings.ts';
export { OutboundPolicy, OutboundRefused } from './outbound.ts';
export { count, empty, fields, join, raw, sql, sum, typed, where, Expr, Sql } from './sql.ts';
export { defineEntity, joined, p, type TableRecord } from './table.ts';
export type { AppConfig, SettingValues, SiteSetting, SiteSettings } from './config.ts';
export * from './format.ts';
export * as S from './schemas.ts';
