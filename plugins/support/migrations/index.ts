// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261121110742_support_init.ts';
import m1 from './20261127103928_support_category_tickets.ts';

export const migrations = [m0, m1];
