import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125183938_store_guest_orders',
  sqlite: [
    'alter table `store_orders` add column `guest_name` text null',
    'alter table `store_orders` add column `guest_key` text null',
    'create index `store_orders_guest_key_index` on `store_orders` (`guest_key`)',
  ],
  mysql: [
    'alter table `store_orders` add `guest_name` varchar(16) null, add `guest_key` varchar(16) null',
    'alter table `store_orders` add index `store_orders_guest_key_index` (`guest_key`)',
  ],
});
