import { defineMigration } from '@community-platform/sdk';

export default defineMigration({
  name: '20261121000000_hello_init',
  sqlite: ['create table `hello_greetings` (`id` integer not null primary key autoincrement, `name` text not null)'],
  mysql: [
    'create table `hello_greetings` (`id` int unsigned not null auto_increment primary key, `name` varchar(64) not null) default character set utf8mb4 engine = InnoDB',
  ],
});
