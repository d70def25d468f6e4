import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128122111_subscriptions_init',
  sqlite: [
    'create table `subscriptions_periods` (`id` integer not null primary key autoincrement, `subscription_id` integer not null, `period_no` integer not null, `amount` integer not null, `period_start` text not null, `period_end` text not null, `status` text not null, `paid_date` text not null)',
    'create unique index `subscriptions_periods_subscription_id_period_no_unique` on `subscriptions_periods` (`subscription_id`, `period_no`)',
    'create table `subscriptions_plans` (`id` integer not null primary key autoincrement, `product_id` integer not null, `interval_unit` text not null, `interval_count` integer not null, `price` integer not null, `trial_days` integer not null, `role_id` integer not null, `role_days` integer not null, `renew_with` text not null, `is_active` integer not null, `creation_date` text not null)',
    'create unique index `subscriptions_plans_product_id_unique` on `subscriptions_plans` (`product_id`)',
    'create table `subscriptions_subscriptions` (`id` integer not null primary key autoincrement, `user_id` integer not null, `product_id` integer not null, `plan_id` integer not null, `live_key` text null, `gateway` text not null, `interval_unit` text not null, `interval_count` integer not null, `price` integer not null, `currency` text not null, `status` text not null, `period_no` integer not null, `anchor_date` text not null, `period_start` text not null, `period_end` text not null, `grace_until` text null, `cancel_at_period_end` integer not null, `start_date` text not null, `end_date` text null, `end_reason` text null)',
    'create index `subscriptions_subscriptions_user_id_index` on `subscriptions_subscriptions` (`user_id`)',
    'create unique index `subscriptions_subscriptions_live_key_unique` on `subscriptions_subscriptions` (`live_key`)',
    'create index `subscriptions_subscriptions_status_period_end_index` on `subscriptions_subscriptions` (`status`, `period_end`)',
    'create index `subscriptions_subscriptions_product_id_status_index` on `subscriptions_subscriptions` (`product_id`, `status`)',
  ],
  mysql: [
    'create table `subscriptions_periods` (`id` int unsigned not null auto_increment primary key, `subscription_id` int not null, `period_no` int not null, `amount` int not null, `period_start` varchar(19) not null, `period_end` varchar(19) not null, `status` varchar(16) not null, `paid_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `subscriptions_periods` add unique `subscriptions_periods_subscription_id_period_no_unique` (`subscription_id`, `period_no`)',
    'create table `subscriptions_plans` (`id` int unsigned not null auto_increment primary key, `product_id` int not null, `interval_unit` varchar(8) not null, `interval_count` int not null, `price` int not null, `trial_days` int not null, `role_id` int not null, `role_days` int not null, `renew_with` varchar(8) not null, `is_active` tinyint(1) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `subscriptions_plans` add unique `subscriptions_plans_product_id_unique` (`product_id`)',
    'create table `subscriptions_subscriptions` (`id` int unsigned not null auto_increment primary key, `user_id` int not null, `product_id` int not null, `plan_id` int not null, `live_key` varchar(32) null, `gateway` varchar(16) not null, `interval_unit` varchar(8) not null, `interval_count` int not null, `price` int not null, `currency` varchar(3) not null, `status` varchar(16) not null, `period_no` int not null, `anchor_date` varchar(19) not null, `period_start` varchar(19) not null, `period_end` varchar(19) not null, `grace_until` varchar(19) null, `cancel_at_period_end` tinyint(1) not null, `start_date` varchar(19) not null, `end_date` varchar(19) null, `end_reason` varchar(16) null) default character set utf8mb4 engine = InnoDB',
    'alter table `subscriptions_subscriptions` add index `subscriptions_subscriptions_user_id_index` (`user_id`)',
    'alter table `subscriptions_subscriptions` add unique `subscriptions_subscriptions_live_key_unique` (`live_key`)',
    'alter table `subscriptions_subscriptions` add index `subscriptions_subscriptions_status_period_end_index` (`status`, `period_end`)',
    'alter table `subscriptions_subscriptions` add index `subscriptions_subscriptions_product_id_status_index` (`product_id`, `status`)',
  ],
});
