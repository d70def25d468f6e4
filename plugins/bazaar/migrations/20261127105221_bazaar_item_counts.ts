import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261127105221_bazaar_item_counts',
  sqlite: [
    'create table `bazaar_item_counts` (`id` integer not null primary key autoincrement, `owner` integer not null, `server_id` integer not null, `items` integer not null)',
    'create index `bazaar_item_counts_server_id_index` on `bazaar_item_counts` (`server_id`)',
    'create unique index `bazaar_item_counts_owner_server_id_unique` on `bazaar_item_counts` (`owner`, `server_id`)',
    'alter table `bazaar_servers` add column `storages` integer not null default 0',
    // Items stored before the counts existed are counted in.
    'insert into `bazaar_item_counts` (`owner`, `server_id`, `items`) select `owner`, `server_id`, count(*) from `bazaar_items` group by `owner`, `server_id`',
    'update `bazaar_servers` set `storages` = (select count(*) from `bazaar_item_counts` where `bazaar_item_counts`.`server_id` = `bazaar_servers`.`id`)',
  ],
  mysql: [
    'create table `bazaar_item_counts` (`id` int unsigned not null auto_increment primary key, `owner` int not null, `server_id` int not null, `items` int not null) default character set utf8mb4 engine = InnoDB',
    'alter table `bazaar_item_counts` add index `bazaar_item_counts_server_id_index` (`server_id`)',
    'alter table `bazaar_item_counts` add unique `bazaar_item_counts_owner_server_id_unique` (`owner`, `server_id`)',
    'alter table `bazaar_servers` add `storages` int not null default 0',
    // Items stored before the counts existed are counted in.
    'insert into `bazaar_item_counts` (`owner`, `server_id`, `items`) select `owner`, `server_id`, count(*) from `bazaar_items` group by `owner`, `server_id`',
    'update `bazaar_servers` set `storages` = (select count(*) from `bazaar_item_counts` where `bazaar_item_counts`.`server_id` = `bazaar_servers`.`id`)',
  ],
});
