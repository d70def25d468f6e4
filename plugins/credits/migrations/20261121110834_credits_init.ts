import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110834_credits_init',
  sqlite: [
    'create table `credits_ledger` (`id` integer not null primary key autoincrement, `user_id` integer not null, `delta` bigint not null, `balance` bigint not null, `reason` text not null, `key_name` text null, `order_id` integer null, `transfer_id` text null, `created_at` text not null)',
    'create index `credits_ledger_order_id_index` on `credits_ledger` (`order_id`)',
    'create index `credits_ledger_user_id_id_index` on `credits_ledger` (`user_id`, `id`)',
    'create table `credits_wallets` (`user_id` integer not null primary key, `balance` bigint not null, constraint `credits_wallets_balance_check` check (balance >= 0))',
  ],
  mysql: [
    'create table `credits_ledger` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `delta` bigint not null, `balance` bigint not null, `reason` varchar(32) not null, `key_name` varchar(64) null, `order_id` int null, `transfer_id` varchar(36) null, `created_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `credits_ledger` add index `credits_ledger_order_id_index` (`order_id`)',
    'alter table `credits_ledger` add index `credits_ledger_user_id_id_index` (`user_id`, `id`)',
    'create table `credits_wallets` (`user_id` int unsigned not null, `balance` bigint not null, primary key (`user_id`)) default character set utf8mb4 engine = InnoDB',
    'alter table `credits_wallets` add constraint `credits_wallets_balance_check` check (balance >= 0)',
  ],
});
