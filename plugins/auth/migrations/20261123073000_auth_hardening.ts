import { defineMigration } from '../../../core/db.ts';

/** Issue 16: the per-ip register lock, per-account lockouts, and room for encrypted TOTP secrets. */
export default defineMigration({
  name: '20261123073000_auth_hardening',
  sqlite: [
    'create table `auth_register_locks` (`ip` text not null primary key, `locked_at` text not null)',
    'alter table `auth_credentials` add column `failed_attempts` integer not null default 0',
    'alter table `auth_credentials` add column `locked_until` text null',
    'alter table `auth_totp` add column `failed_attempts` integer not null default 0',
    'alter table `auth_totp` add column `locked_until` text null',
  ],
  mysql: [
    'create table `auth_register_locks` (`ip` varchar(45) not null primary key, `locked_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `auth_credentials` add `failed_attempts` int not null default 0, add `locked_until` varchar(19) null',
    'alter table `auth_totp` modify `secret` varchar(255) null, modify `pending_secret` varchar(255) null, add `failed_attempts` int not null default 0, add `locked_until` varchar(19) null',
  ],
});
