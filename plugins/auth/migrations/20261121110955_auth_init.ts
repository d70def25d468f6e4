import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110955_auth_init',
  sqlite: [
    'create table `auth_credentials` (`id` integer not null primary key autoincrement, `user_id` integer not null, `password_hash` text not null, `updated_at` text not null)',
    'create unique index `auth_credentials_user_id_unique` on `auth_credentials` (`user_id`)',
    'create table `auth_sessions` (`id` integer not null primary key autoincrement, `token_hash` text not null, `user_id` integer not null, `ip` text not null, `user_agent` text null, `verified` integer not null, `failed_codes` integer not null, `created_at` text not null, `expires_at` text not null)',
    'create unique index `auth_sessions_token_hash_unique` on `auth_sessions` (`token_hash`)',
    'create index `auth_sessions_user_id_index` on `auth_sessions` (`user_id`)',
    'create index `auth_sessions_expires_at_index` on `auth_sessions` (`expires_at`)',
    'create table `auth_totp` (`id` integer not null primary key autoincrement, `user_id` integer not null, `secret` text null, `pending_secret` text null, `last_step` integer not null)',
    'create unique index `auth_totp_user_id_unique` on `auth_totp` (`user_id`)',
  ],
  mysql: [
    'create table `auth_credentials` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `password_hash` varchar(255) not null, `updated_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `auth_credentials` add unique `auth_credentials_user_id_unique` (`user_id`)',
    'create table `auth_sessions` (`id` int unsigned not null auto_increment primary key, `token_hash` varchar(64) not null, `user_id` int not null, `ip` varchar(45) not null, `user_agent` varchar(512) null, `verified` tinyint(1) not null, `failed_codes` int not null, `created_at` varchar(19) not null, `expires_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `auth_sessions` add unique `auth_sessions_token_hash_unique` (`token_hash`)',
    'alter table `auth_sessions` add index `auth_sessions_user_id_index` (`user_id`)',
    'alter table `auth_sessions` add index `auth_sessions_expires_at_index` (`expires_at`)',
    'create table `auth_totp` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `secret` varchar(64) null, `pending_secret` varchar(64) null, `last_step` int not null) default character set utf8mb4 engine = InnoDB',
    'alter table `auth_totp` add unique `auth_totp_user_id_unique` (`user_id`)',
  ],
});
