import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110829_bazaar_init',
  sqlite: [
    'create table `bazaar_items` (`id` integer not null primary key autoincrement, `owner` integer not null, `server_id` integer not null, `item_id` text not null, `model_id` integer null, `name` mediumtext not null, `lore` mediumtext null, `amount` integer not null, `durability` integer not null, `max_durability` integer not null, `enchantments` mediumtext null, `base64` mediumtext not null, `description` mediumtext null, `price` integer not null, `sold` integer not null, `creation_date` text not null)',
    'create index `bazaar_items_server_id_index` on `bazaar_items` (`server_id`)',
    'create index `bazaar_items_owner_server_id_index` on `bazaar_items` (`owner`, `server_id`)',
    'create table `bazaar_servers` (`id` integer not null primary key autoincrement, `name` text not null, `slug` text not null, `image_id` text not null, `image_type` text not null, `priority` integer not null, `is_active` integer not null)',
    'create unique index `bazaar_servers_slug_unique` on `bazaar_servers` (`slug`)',
  ],
  mysql: [
    'create table `bazaar_items` (`id` int unsigned not null auto_increment primary key, `owner` int not null, `server_id` int not null, `item_id` varchar(128) not null, `model_id` int null, `name` mediumtext not null, `lore` mediumtext null, `amount` int not null, `durability` int not null, `max_durability` int not null, `enchantments` mediumtext null, `base64` mediumtext not null, `description` mediumtext null, `price` int not null, `sold` tinyint(1) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `bazaar_items` add index `bazaar_items_server_id_index` (`server_id`)',
    'alter table `bazaar_items` add index `bazaar_items_owner_server_id_index` (`owner`, `server_id`)',
    'create table `bazaar_servers` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null, `slug` varchar(64) not null, `image_id` varchar(64) not null, `image_type` varchar(16) not null, `priority` int not null, `is_active` tinyint(1) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `bazaar_servers` add unique `bazaar_servers_slug_unique` (`slug`)',
  ],
});
