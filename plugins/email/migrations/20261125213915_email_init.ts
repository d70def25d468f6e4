import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125213915_email_init',
  sqlite: [
    'create table `email_outbox` (`id` integer not null primary key autoincrement, `kind` text not null, `user_id` integer null, `recipient` text not null, `lang` text not null, `params` text not null, `subject` text null, `state` text not null, `attempts` integer not null, `due_at` bigint not null, `last_error` text null, `created_at` text not null, `sent_at` text null)',
    'create index `email_outbox_state_due_at_index` on `email_outbox` (`state`, `due_at`)',
    'create table `email_tokens` (`id` integer not null primary key autoincrement, `token_hash` text not null, `user_id` integer not null, `purpose` text not null, `expires_at` text not null, `used_at` text null, `created_at` text not null)',
    'create unique index `email_tokens_token_hash_unique` on `email_tokens` (`token_hash`)',
    'create index `email_tokens_user_id_index` on `email_tokens` (`user_id`)',
  ],
  mysql: [
    'create table `email_outbox` (`id` int unsigned not null auto_increment primary key, `kind` varchar(32) not null, `user_id` int null, `recipient` varchar(191) not null, `lang` varchar(8) not null, `params` text not null, `subject` varchar(255) null, `state` varchar(16) not null, `attempts` int not null, `due_at` bigint not null, `last_error` varchar(255) null, `created_at` varchar(19) not null, `sent_at` varchar(19) null) default character set utf8mb4 engine = InnoDB',
    'alter table `email_outbox` add index `email_outbox_state_due_at_index` (`state`, `due_at`)',
    'create table `email_tokens` (`id` int unsigned not null auto_increment primary key, `token_hash` varchar(64) not null, `user_id` int not null, `purpose` varchar(16) not null, `expires_at` varchar(19) not null, `used_at` varchar(19) null, `created_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `email_tokens` add unique `email_tokens_token_hash_unique` (`token_hash`)',
    'alter table `email_tokens` add index `email_tokens_user_id_index` (`user_id`)',
  ],
});
