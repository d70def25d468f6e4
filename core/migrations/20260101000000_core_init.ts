import { defineMigration } from '../db.ts';

export default defineMigration({
  name: '20260101000000_core_init',
  sqlite: [
    'create table `core_api_keys` (`id` integer not null primary key autoincrement, `name` text not null, `key_hash` text not null, `scopes` text not null, `created_at` text not null, `revoked_at` text null)',
    'create unique index `core_api_keys_name_unique` on `core_api_keys` (`name`)',
    'create unique index `core_api_keys_key_hash_unique` on `core_api_keys` (`key_hash`)',
    'create table `core_settings` (`key` text not null primary key, `value` text not null)',
  ],
  mysql: [
    'create table `core_api_keys` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null, `key_hash` varchar(64) not null, `scopes` varchar(64) not null, `created_at` varchar(19) not null, `revoked_at` varchar(19) null) default character set utf8mb4 engine = InnoDB',
    'alter table `core_api_keys` add unique `core_api_keys_name_unique` (`name`)',
    'alter table `core_api_keys` add unique `core_api_keys_key_hash_unique` (`key_hash`)',
    'create table `core_settings` (`key` varchar(64) not null, `value` text not null, primary key (`key`)) default character set utf8mb4 engine = InnoDB',
  ],
});
