import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128154303_subscriptions_gateways',
  sqlite: [
    'create table `subscriptions_checkouts` (`id` integer not null primary key autoincrement, `user_id` integer not null, `product_id` integer not null, `plan_id` integer not null, `gateway` text not null, `checkout_ref` text null, `subscription_id` integer null, `creation_date` text not null)',
    'create table `subscriptions_gateway_events` (`id` integer not null primary key autoincrement, `gateway` text not null, `event_id` text not null, `subscription_id` integer not null, `kind` text not null, `creation_date` text not null)',
    'create unique index `subscriptions_gateway_events_gateway_event_id_unique` on `subscriptions_gateway_events` (`gateway`, `event_id`)',
    'alter table `subscriptions_subscriptions` add column `gateway_ref` text null',
    'create unique index `subscriptions_subscriptions_gateway_gateway_ref_unique` on `subscriptions_subscriptions` (`gateway`, `gateway_ref`)',
  ],
  mysql: [
    'create table `subscriptions_checkouts` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `product_id` int not null, `plan_id` int not null, `gateway` varchar(16) not null, `checkout_ref` varchar(255) null, `subscription_id` int null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'create table `subscriptions_gateway_events` (`id` int unsigned not null auto_increment primary key, `gateway` varchar(16) not null, `event_id` varchar(255) not null, `subscription_id` int not null, `kind` varchar(32) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `subscriptions_gateway_events` add unique `subscriptions_gateway_events_gateway_event_id_unique` (`gateway`, `event_id`)',
    'alter table `subscriptions_subscriptions` add `gateway_ref` varchar(255) null',
    'alter table `subscriptions_subscriptions` add unique `subscriptions_subscriptions_gateway_gateway_ref_unique` (`gateway`, `gateway_ref`)',
  ],
});
