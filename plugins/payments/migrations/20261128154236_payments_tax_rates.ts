import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128154236_payments_tax_rates',
  sqlite: [
    'create table `payments_tax_rates` (`id` integer not null primary key autoincrement, `country` text not null, `region` text not null, `rate` integer not null, `update_date` text not null)',
    'create unique index `payments_tax_rates_country_region_unique` on `payments_tax_rates` (`country`, `region`)',
    'alter table `payments_payments` add column `tax_facts` text null',
    "alter table `payments_taxes` add column `region` text not null default ''",
    "alter table `payments_taxes` add column `ip_country` text not null default ''",
    'alter table `payments_taxes` add column `rate` integer null',
  ],
  mysql: [
    'create table `payments_tax_rates` (`id` int unsigned not null auto_increment primary key, `country` varchar(2) not null, `region` varchar(3) not null, `rate` int not null, `update_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `payments_tax_rates` add unique `payments_tax_rates_country_region_unique` (`country`, `region`)',
    'alter table `payments_payments` add `tax_facts` text null',
    "alter table `payments_taxes` add `region` varchar(3) not null default '', add `ip_country` varchar(2) not null default '', add `rate` int null",
  ],
});
