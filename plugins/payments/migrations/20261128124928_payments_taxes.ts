import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128124928_payments_taxes',
  sqlite: [
    'create table `payments_taxes` (`payment_id` text not null primary key, `country` text not null, `amount` bigint not null, `currency` text not null, `inclusive` integer not null, `creation_date` text not null)',
    'create index `payments_taxes_creation_date_index` on `payments_taxes` (`creation_date`)',
  ],
  mysql: [
    'create table `payments_taxes` (`payment_id` varchar(32) not null, `country` varchar(2) not null, `amount` bigint not null, `currency` varchar(3) not null, `inclusive` tinyint(1) not null, `creation_date` varchar(19) not null, primary key (`payment_id`)) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_taxes` add index `payments_taxes_creation_date_index` (`creation_date`)',
  ],
});
