import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125215001_store_order_status_type_indexes',
  sqlite: [
    'create index `store_orders_status_id_index` on `store_orders` (`status`, `id`)',
    'create index `store_orders_type_id_index` on `store_orders` (`type`, `id`)',
  ],
  mysql: [
    'alter table `store_orders` add index `store_orders_status_id_index` (`status`, `id`)',
    'alter table `store_orders` add index `store_orders_type_id_index` (`type`, `id`)',
  ],
});
