import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123104447_store_order_date_index',
  sqlite: ['create index `store_orders_creation_date_index` on `store_orders` (`creation_date`)'],
  mysql: ['alter table `store_orders` add index `store_orders_creation_date_index` (`creation_date`)'],
});
