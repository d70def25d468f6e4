import { defineMigration } from '../db.ts';

/** The audit log's table (core/audit.ts): what staff changed, written in the change's transaction. */

export default defineMigration({
  name: '20261125213515_core_audit_log',
  sqlite: [
    'create table `core_audit_log` (`id` integer not null primary key autoincrement, `at` text not null, `actor_kind` text not null, `actor` text not null, `action` text not null, `target_type` text not null, `target_id` text not null, `summary` text not null, `before` text null, `after` text null, `request_id` text null)',
    'create index `core_audit_log_actor_index` on `core_audit_log` (`actor`)',
    'create index `core_audit_log_action_index` on `core_audit_log` (`action`)',
    'create index `core_audit_log_target_id_index` on `core_audit_log` (`target_id`)',
  ],
  mysql: [
    'create table `core_audit_log` (`id` int unsigned not null auto_increment primary key, `at` varchar(19) not null, `actor_kind` varchar(8) not null, `actor` varchar(64) not null, `action` varchar(64) not null, `target_type` varchar(32) not null, `target_id` varchar(64) not null, `summary` varchar(255) not null, `before` text null, `after` text null, `request_id` varchar(64) null) default character set utf8mb4 engine = InnoDB',
    'alter table `core_audit_log` add index `core_audit_log_actor_index` (`actor`)',
    'alter table `core_audit_log` add index `core_audit_log_action_index` (`action`)',
    'alter table `core_audit_log` add index `core_audit_log_target_id_index` (`target_id`)',
  ],
});
