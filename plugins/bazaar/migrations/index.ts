// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261121110829_bazaar_init.ts';
import m1 from './20261127105221_bazaar_item_counts.ts';

export const migrations = [m0, m1];
