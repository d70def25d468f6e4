import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125213549_store_order_adjustments',
  sqlite: [
    'create table `store_order_adjustments` (`id` integer not null primary key autoincrement, `order_id` integer not null, `kind` text not null, `code` text not null, `amount` bigint not null, `paid` integer not null)',
    'create index `store_order_adjustments_order_id_index` on `store_order_adjustments` (`order_id`)',
  ],
  mysql: [
    'create table `store_order_adjustments` (`id` int unsigned not null auto_increment primary key, `order_id` int not null, `kind` varchar(32) not null, `code` varchar(64) not null, `amount` bigint not null, `paid` tinyint(1) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_order_adjustments` add index `store_order_adjustments_order_id_index` (`order_id`)',
  ],
});
