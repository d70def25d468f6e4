import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261127105659_notifications_init',
  sqlite: [
    'create table `notifications_attempts` (`id` integer not null primary key autoincrement, `delivery_id` integer not null, `started_date` text not null, `duration_ms` integer not null, `status` integer null, `response` text not null, `error` text null)',
    'create index `notifications_attempts_delivery_id_index` on `notifications_attempts` (`delivery_id`)',
    'create table `notifications_deliveries` (`id` integer not null primary key autoincrement, `event_id` integer not null, `endpoint_id` integer not null, `status` text not null, `attempts` integer not null, `next_attempt_date` text not null, `lease_until` text null, `claim` text null, `last_status` integer null, `updated_date` text not null)',
    'create index `notifications_deliveries_endpoint_id_status_next_attempt_date_index` on `notifications_deliveries` (`endpoint_id`, `status`, `next_attempt_date`)',
    'create index `notifications_deliveries_lease_until_index` on `notifications_deliveries` (`lease_until`)',
    'create unique index `notifications_deliveries_event_id_endpoint_id_unique` on `notifications_deliveries` (`event_id`, `endpoint_id`)',
    'create table `notifications_endpoints` (`id` integer not null primary key autoincrement, `name` text not null, `kind` text not null, `url` text not null, `secret` text not null, `events` text not null, `active` integer not null, `created_date` text not null)',
    'create table `notifications_events` (`id` integer not null primary key autoincrement, `message_id` text not null, `name` text not null, `payload` text not null, `created_date` text not null, `fanned` integer not null)',
    'create index `notifications_events_fanned_id_index` on `notifications_events` (`fanned`, `id`)',
    'create table `notifications_templates` (`id` integer not null primary key autoincrement, `event` text not null, `title` text not null, `body` text not null)',
    'create unique index `notifications_templates_event_unique` on `notifications_templates` (`event`)',
  ],
  mysql: [
    'create table `notifications_attempts` (`id` int unsigned not null auto_increment primary key, `delivery_id` int not null, `started_date` varchar(19) not null, `duration_ms` int not null, `status` int null, `response` text not null, `error` varchar(500) null) default character set utf8mb4 engine = InnoDB',
    'alter table `notifications_attempts` add index `notifications_attempts_delivery_id_index` (`delivery_id`)',
    'create table `notifications_deliveries` (`id` int unsigned not null auto_increment primary key, `event_id` int not null, `endpoint_id` int not null, `status` varchar(16) not null, `attempts` int not null, `next_attempt_date` varchar(19) not null, `lease_until` varchar(19) null, `claim` varchar(32) null, `last_status` int null, `updated_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `notifications_deliveries` add index `notifications_deliveries_endpoint_id_status_next_at_13767_index` (`endpoint_id`, `status`, `next_attempt_date`)',
    'alter table `notifications_deliveries` add index `notifications_deliveries_lease_until_index` (`lease_until`)',
    'alter table `notifications_deliveries` add unique `notifications_deliveries_event_id_endpoint_id_unique` (`event_id`, `endpoint_id`)',
    'create table `notifications_endpoints` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null, `kind` varchar(16) not null, `url` varchar(2048) not null, `secret` varchar(64) not null, `events` text not null, `active` tinyint(1) not null, `created_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'create table `notifications_events` (`id` int unsigned not null auto_increment primary key, `message_id` varchar(40) not null, `name` varchar(100) not null, `payload` text not null, `created_date` varchar(19) not null, `fanned` tinyint(1) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `notifications_events` add index `notifications_events_fanned_id_index` (`fanned`, `id`)',
    'create table `notifications_templates` (`id` int unsigned not null auto_increment primary key, `event` varchar(100) not null, `title` varchar(256) not null, `body` text not null) default character set utf8mb4 engine = InnoDB',
    'alter table `notifications_templates` add unique `notifications_templates_event_unique` (`event`)',
  ],
});
