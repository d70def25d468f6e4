import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123082113_store_purchase_rules',
  sqlite: [
    'create table `store_product_rules` (`product_id` integer not null primary key, `required_product_id` integer not null, `require_linked_account` integer not null, `prevent_downgrade` integer not null)',
  ],
  mysql: [
    'create table `store_product_rules` (`product_id` int unsigned not null, `required_product_id` int not null, `require_linked_account` tinyint(1) not null, `prevent_downgrade` tinyint(1) not null, primary key (`product_id`)) default character set utf8mb4 engine = InnoDB',
  ],
});
