import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128085657_payments_checkouts',
  sqlite: [
    'create table `payments_checkouts` (`fingerprint` text not null primary key, `payment_id` text not null, `creation_date` text not null)',
    'create index `payments_checkouts_creation_date_index` on `payments_checkouts` (`creation_date`)',
  ],
  mysql: [
    'create table `payments_checkouts` (`fingerprint` varchar(64) not null, `payment_id` varchar(32) not null, `creation_date` varchar(19) not null, primary key (`fingerprint`)) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_checkouts` add index `payments_checkouts_creation_date_index` (`creation_date`)',
  ],
});
