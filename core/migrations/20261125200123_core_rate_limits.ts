import { defineMigration } from '../db.ts';

/** Request rate limits counted in the database, so every instance on it shares one count (core/rate-limits.ts). */
export default defineMigration({
  name: '20261125200123_core_rate_limits',
  sqlite: [
    'create table `core_rate_limits` (`bucket` text not null primary key, `hits` integer not null, `expires_at` bigint not null)',
    'create index `core_rate_limits_expires_at_index` on `core_rate_limits` (`expires_at`)',
  ],
  mysql: [
    'create table `core_rate_limits` (`bucket` varchar(64) not null, `hits` int not null, `expires_at` bigint not null, primary key (`bucket`)) default character set utf8mb4 engine = InnoDB',
    'alter table `core_rate_limits` add index `core_rate_limits_expires_at_index` (`expires_at`)',
  ],
});
