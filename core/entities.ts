/** The host's own tables, for every place that opens the database with its migrations. */
import { CoreApiKey } from './api-keys.ts';
import { CoreAuditLog } from './audit.ts';
import { CoreIdempotencyKey } from './idempotency.ts';
import { CoreRateLimit } from './rate-limits.ts';
import { CoreSetting } from './settings.ts';

export const coreEntities = [CoreSetting, CoreApiKey, CoreRateLimit, CoreAuditLog, CoreIdempotencyKey];
