import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128124500_store_test_orders',
  sqlite: ['alter table `store_orders` add column `test` integer not null default false'],
  mysql: ['alter table `store_orders` add `test` tinyint(1) not null default false'],
});
