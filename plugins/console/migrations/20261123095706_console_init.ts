import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123095706_console_init',
  sqlite: [
    'create table `console_sessions` (`id` integer not null primary key autoincrement, `token_hash` text not null, `user_id` integer not null, `csrf_token` text not null, `ip` text not null, `created_at` text not null, `last_seen_at` text not null)',
    'create unique index `console_sessions_token_hash_unique` on `console_sessions` (`token_hash`)',
    'create index `console_sessions_user_id_index` on `console_sessions` (`user_id`)',
    'create index `console_sessions_last_seen_at_index` on `console_sessions` (`last_seen_at`)',
  ],
  mysql: [
    'create table `console_sessions` (`id` int unsigned not null auto_increment primary key, `token_hash` varchar(64) not null, `user_id` int not null, `csrf_token` varchar(64) not null, `ip` varchar(45) not null, `created_at` varchar(19) not null, `last_seen_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `console_sessions` add unique `console_sessions_token_hash_unique` (`token_hash`)',
    'alter table `console_sessions` add index `console_sessions_user_id_index` (`user_id`)',
    'alter table `console_sessions` add index `console_sessions_last_seen_at_index` (`last_seen_at`)',
  ],
});
