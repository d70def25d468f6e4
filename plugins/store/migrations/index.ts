// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261121110804_store_init.ts';
import m1 from './20261123082113_store_purchase_rules.ts';
import m2 from './20261123104447_store_order_date_index.ts';
import m3 from './20261125183938_store_guest_orders.ts';
import m4 from './20261125213549_store_order_adjustments.ts';
import m5 from './20261125215001_store_order_status_type_indexes.ts';
import m6 from './20261128123000_store_guest_email.ts';
import m7 from './20261128124500_store_test_orders.ts';

export const migrations = [m0, m1, m2, m3, m4, m5, m6, m7];
