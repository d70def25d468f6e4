// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261123081357_delivery_init.ts';
import m1 from './20261125183856_delivery_retry_not_before.ts';

export const migrations = [m0, m1];
