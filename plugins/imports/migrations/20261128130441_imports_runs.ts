import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128130441_imports_runs',
  sqlite: [
    'create table `imports_runs` (`id` integer not null primary key autoincrement, `source` text not null, `dry_run` integer not null, `status` text not null, `started_at` text not null, `finished_at` text null, `report` mediumtext not null, `error` text null)',
  ],
  mysql: [
    'create table `imports_runs` (`id` int unsigned not null auto_increment primary key, `source` varchar(255) not null, `dry_run` tinyint(1) not null, `status` varchar(16) not null, `started_at` varchar(19) not null, `finished_at` varchar(19) null, `report` mediumtext not null, `error` varchar(1000) null) default character set utf8mb4 engine = InnoDB',
  ],
});
