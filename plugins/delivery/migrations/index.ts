// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261123081357_delivery_init.ts';
import m1 from './20261125183856_delivery_retry_not_before.ts';
import m2 from './20261127171235_delivery_server_queue_index.ts';

export const migrations = [m0, m1, m2];
