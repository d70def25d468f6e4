import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121111814_chat_integration_init',
  sqlite: [
    'create table `chat_integration_role_sync` (`id` integer not null primary key autoincrement, `user_id` integer not null, `chat_user_id` text not null, `chat_role_id` text not null, `attempts` integer not null, `due_at` bigint not null, `last_error` text null, `failed_at` text null, `created_at` text not null)',
    'create index `chat_integration_role_sync_due_at_index` on `chat_integration_role_sync` (`due_at`)',
    'create index `chat_integration_role_sync_user_id_chat_role_id_index` on `chat_integration_role_sync` (`user_id`, `chat_role_id`)',
    'create table `chat_integration_settings` (`name` text not null primary key, `value` text not null)',
  ],
  mysql: [
    'create table `chat_integration_role_sync` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `chat_user_id` varchar(64) not null, `chat_role_id` varchar(32) not null, `attempts` int not null, `due_at` bigint not null, `last_error` varchar(255) null, `failed_at` varchar(19) null, `created_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `chat_integration_role_sync` add index `chat_integration_role_sync_due_at_index` (`due_at`)',
    'alter table `chat_integration_role_sync` add index `chat_integration_role_sync_user_id_chat_role_id_index` (`user_id`, `chat_role_id`)',
    'create table `chat_integration_settings` (`name` varchar(64) not null, `value` text not null, primary key (`name`)) default character set utf8mb4 engine = InnoDB',
  ],
});
