import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128121858_payments_disputes',
  sqlite: [
    'create table `payments_blocks` (`id` integer not null primary key autoincrement, `user_id` integer not null, `name_key` text not null, `email_key` text null, `ip` text null, `payment_id` text null, `reason` text not null, `creation_date` text not null, `lifted_date` text null, `lifted_by` text null)',
    'create index `payments_blocks_user_id_index` on `payments_blocks` (`user_id`)',
    'create index `payments_blocks_name_key_index` on `payments_blocks` (`name_key`)',
    'create index `payments_blocks_email_key_index` on `payments_blocks` (`email_key`)',
    'create index `payments_blocks_ip_index` on `payments_blocks` (`ip`)',
    'create index `payments_blocks_payment_id_index` on `payments_blocks` (`payment_id`)',
    'create table `payments_disputes` (`payment_id` text not null primary key, `gateway` text not null, `dispute_ref` text null, `reason` text not null, `status` text not null, `amount` bigint not null, `currency` text not null, `evidence_date` text null, `creation_date` text not null, `update_date` text not null)',
    'create index `payments_disputes_status_index` on `payments_disputes` (`status`)',
    'create index `payments_disputes_creation_date_index` on `payments_disputes` (`creation_date`)',
  ],
  mysql: [
    'create table `payments_blocks` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `name_key` varchar(64) not null, `email_key` varchar(255) null, `ip` varchar(45) null, `payment_id` varchar(32) null, `reason` varchar(255) not null, `creation_date` varchar(19) not null, `lifted_date` varchar(19) null, `lifted_by` varchar(64) null) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_blocks` add index `payments_blocks_user_id_index` (`user_id`)',
    'alter table `payments_blocks` add index `payments_blocks_name_key_index` (`name_key`)',
    'alter table `payments_blocks` add index `payments_blocks_email_key_index` (`email_key`)',
    'alter table `payments_blocks` add index `payments_blocks_ip_index` (`ip`)',
    'alter table `payments_blocks` add index `payments_blocks_payment_id_index` (`payment_id`)',
    'create table `payments_disputes` (`payment_id` varchar(32) not null, `gateway` varchar(32) not null, `dispute_ref` varchar(255) null, `reason` varchar(64) not null, `status` varchar(8) not null, `amount` bigint not null, `currency` varchar(3) not null, `evidence_date` varchar(19) null, `creation_date` varchar(19) not null, `update_date` varchar(19) not null, primary key (`payment_id`)) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_disputes` add index `payments_disputes_status_index` (`status`)',
    'alter table `payments_disputes` add index `payments_disputes_creation_date_index` (`creation_date`)',
  ],
});
