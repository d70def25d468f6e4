import { defineMigration } from '../db.ts';

/** Idempotency-Keys of API callers: the first answer of each, replayed to a retry (core/idempotency.ts). */
export default defineMigration({
  name: '20261128083516_core_idempotency_keys',
  sqlite: [
    'create table `core_idempotency_keys` (`id` text not null primary key, `fingerprint` text not null, `token` text not null, `status` integer not null, `content_type` text null, `body` mediumtext null, `lease_until` bigint not null, `expires_at` bigint not null)',
    'create index `core_idempotency_keys_expires_at_index` on `core_idempotency_keys` (`expires_at`)',
  ],
  mysql: [
    'create table `core_idempotency_keys` (`id` varchar(64) not null, `fingerprint` varchar(64) not null, `token` varchar(32) not null, `status` int not null, `content_type` varchar(100) null, `body` mediumtext null, `lease_until` bigint not null, `expires_at` bigint not null, primary key (`id`)) default character set utf8mb4 engine = InnoDB',
    'alter table `core_idempotency_keys` add index `core_idempotency_keys_expires_at_index` (`expires_at`)',
  ],
});
