import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128123611_imports_init',
  sqlite: [
    'create table `imports_links` (`id` integer not null primary key autoincrement, `source` text not null, `kind` text not null, `source_id` text not null, `local_id` integer not null, `created_at` text not null)',
    'create unique index `imports_links_source_kind_source_id_unique` on `imports_links` (`source`, `kind`, `source_id`)',
  ],
  mysql: [
    'create table `imports_links` (`id` int unsigned not null auto_increment primary key, `source` varchar(255) not null, `kind` varchar(32) not null, `source_id` varchar(64) not null, `local_id` int not null, `created_at` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `imports_links` add unique `imports_links_source_kind_source_id_unique` (`source`, `kind`, `source_id`)',
  ],
});
