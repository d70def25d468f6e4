import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110944_votes_init',
  sqlite: ['create table `votes_links` (`id` integer not null primary key autoincrement, `name` text not null, `link` text not null)'],
  mysql: [
    'create table `votes_links` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null, `link` varchar(2048) not null) default character set utf8mb4 engine = InnoDB',
  ],
});
