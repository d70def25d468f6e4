// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20260101000000_core_init.ts';
import m1 from './20261123074603_core_api_keys_last_used.ts';
import m2 from './20261123075128_core_api_keys_scopes.ts';
import m3 from './20261125183714_core_api_keys_client_codes.ts';
import m4 from './20261125200123_core_rate_limits.ts';
import m5 from './20261125213515_core_audit_log.ts';
import m6 from './20261128083516_core_idempotency_keys.ts';

export const migrations = [m0, m1, m2, m3, m4, m5, m6];
