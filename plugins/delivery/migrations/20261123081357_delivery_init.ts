import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123081357_delivery_init',
  sqlite: [
    'create table `delivery_commands` (`id` integer not null primary key autoincrement, `product_id` integer not null, `server_id` integer not null, `command` text not null, `run_on` text not null, `require_online` integer not null, `per_unit` integer not null)',
    'create index `delivery_commands_product_id_index` on `delivery_commands` (`product_id`)',
    'create index `delivery_commands_server_id_index` on `delivery_commands` (`server_id`)',
    'create table `delivery_queue` (`id` integer not null primary key autoincrement, `server_id` integer not null, `user_id` integer not null, `username` text not null, `order_id` integer not null, `product_id` integer not null, `command` text not null, `run_on` text not null, `require_online` integer not null, `status` text not null, `tries` integer not null, `lease_until` text null, `last_error` text null, `creation_date` text not null, `updated_date` text not null)',
    'create index `delivery_queue_user_id_index` on `delivery_queue` (`user_id`)',
    'create index `delivery_queue_order_id_index` on `delivery_queue` (`order_id`)',
    'create index `delivery_queue_server_id_status_index` on `delivery_queue` (`server_id`, `status`)',
    'create index `delivery_queue_status_lease_until_index` on `delivery_queue` (`status`, `lease_until`)',
    'create table `delivery_servers` (`id` integer not null primary key autoincrement, `name` text not null, `token_hash` text not null, `is_active` integer not null, `last_seen_date` text null, `creation_date` text not null)',
    'create unique index `delivery_servers_token_hash_unique` on `delivery_servers` (`token_hash`)',
  ],
  mysql: [
    'create table `delivery_commands` (`id` int unsigned not null auto_increment primary key, `product_id` int not null, `server_id` int not null, `command` text not null, `run_on` varchar(16) not null, `require_online` tinyint(1) not null, `per_unit` tinyint(1) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `delivery_commands` add index `delivery_commands_product_id_index` (`product_id`)',
    'alter table `delivery_commands` add index `delivery_commands_server_id_index` (`server_id`)',
    'create table `delivery_queue` (`id` int unsigned not null auto_increment primary key, `server_id` int not null, `user_id` int not null, `username` varchar(64) not null, `order_id` int not null, `product_id` int not null, `command` text not null, `run_on` varchar(16) not null, `require_online` tinyint(1) not null, `status` varchar(16) not null, `tries` int not null, `lease_until` varchar(19) null, `last_error` text null, `creation_date` varchar(19) not null, `updated_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `delivery_queue` add index `delivery_queue_user_id_index` (`user_id`)',
    'alter table `delivery_queue` add index `delivery_queue_order_id_index` (`order_id`)',
    'alter table `delivery_queue` add index `delivery_queue_server_id_status_index` (`server_id`, `status`)',
    'alter table `delivery_queue` add index `delivery_queue_status_lease_until_index` (`status`, `lease_until`)',
    'create table `delivery_servers` (`id` int unsigned not null auto_increment primary key, `name` varchar(128) not null, `token_hash` varchar(64) not null, `is_active` tinyint(1) not null, `last_seen_date` varchar(19) null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `delivery_servers` add unique `delivery_servers_token_hash_unique` (`token_hash`)',
  ],
});
