import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123075932_payments_init',
  sqlite: [
    'create table `payments_events` (`id` integer not null primary key autoincrement, `gateway` text not null, `event_id` text not null, `payment_id` text not null, `kind` text not null, `creation_date` text not null)',
    'create index `payments_events_payment_id_index` on `payments_events` (`payment_id`)',
    'create unique index `payments_events_gateway_event_id_unique` on `payments_events` (`gateway`, `event_id`)',
    'create table `payments_packages` (`id` integer not null primary key autoincrement, `name` text not null, `price` bigint not null, `currency` text not null, `credits` bigint not null, `bonus` bigint not null, `creation_date` text not null)',
    'create table `payments_payments` (`id` text not null primary key, `user_id` integer not null, `gateway` text not null, `checkout_ref` text not null, `charge_ref` text null, `package_id` integer null, `amount` bigint not null, `currency` text not null, `credits` bigint not null, `bonus` bigint not null, `status` text not null, `order_id` integer null, `reclaimed` bigint not null, `debt` bigint not null, `checkout_url` text not null, `creation_date` text not null, `update_date` text not null)',
    'create index `payments_payments_user_id_index` on `payments_payments` (`user_id`)',
    'create index `payments_payments_charge_ref_index` on `payments_payments` (`charge_ref`)',
    'create unique index `payments_payments_gateway_checkout_ref_unique` on `payments_payments` (`gateway`, `checkout_ref`)',
  ],
  mysql: [
    'create table `payments_events` (`id` int unsigned not null auto_increment primary key, `gateway` varchar(32) not null, `event_id` varchar(255) not null, `payment_id` varchar(32) not null, `kind` varchar(16) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_events` add index `payments_events_payment_id_index` (`payment_id`)',
    'alter table `payments_events` add unique `payments_events_gateway_event_id_unique` (`gateway`, `event_id`)',
    'create table `payments_packages` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null, `price` bigint not null, `currency` varchar(3) not null, `credits` bigint not null, `bonus` bigint not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'create table `payments_payments` (`id` varchar(32) not null, `user_id` int not null, `gateway` varchar(32) not null, `checkout_ref` varchar(255) not null, `charge_ref` varchar(255) null, `package_id` int null, `amount` bigint not null, `currency` varchar(3) not null, `credits` bigint not null, `bonus` bigint not null, `status` varchar(16) not null, `order_id` int null, `reclaimed` bigint not null, `debt` bigint not null, `checkout_url` text not null, `creation_date` varchar(19) not null, `update_date` varchar(19) not null, primary key (`id`)) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_payments` add index `payments_payments_user_id_index` (`user_id`)',
    'alter table `payments_payments` add index `payments_payments_charge_ref_index` (`charge_ref`)',
    'alter table `payments_payments` add unique `payments_payments_gateway_checkout_ref_unique` (`gateway`, `checkout_ref`)',
  ],
});
