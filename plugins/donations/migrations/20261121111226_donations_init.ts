import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121111226_donations_init',
  sqlite: [
    'create table `donations_entries` (`id` integer not null primary key autoincrement, `order_id` integer not null, `user_id` integer not null, `username` text not null, `amount` bigint not null, `currency` text not null, `creation_date` text not null)',
    'create unique index `donations_entries_order_id_unique` on `donations_entries` (`order_id`)',
    'create index `donations_entries_creation_date_index` on `donations_entries` (`creation_date`)',
  ],
  mysql: [
    'create table `donations_entries` (`id` int unsigned not null auto_increment primary key, `order_id` int not null, `user_id` int not null, `username` varchar(32) not null, `amount` bigint not null, `currency` varchar(3) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `donations_entries` add unique `donations_entries_order_id_unique` (`order_id`)',
    'alter table `donations_entries` add index `donations_entries_creation_date_index` (`creation_date`)',
  ],
});
