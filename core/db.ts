/**
 * The data layer as features use it. Its parts live in core/db/: the Database facade
 * (database.ts), SQLite's connection and group commit (sqlite.ts), the MySQL/MariaDB runner
 * (mysql.ts), migrations (migrations.ts), opening from DATABASE_URL (open.ts, url.ts), what an
 * error means (errors.ts) and how values are bound (values.ts).
 */
export { Database, type RetryOptions, type TransactionScope } from './db/database.ts';
export { isUniqueViolation } from './db/errors.ts';
export { defineMigration, type MigrationDef } from './db/migrations.ts';
export type { PoolStats, RunResult } from './db/runner.ts';
export type { Dialect } from './db/url.ts';
export { countParam, NO_LIMIT } from './db/values.ts';
