import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110742_support_init',
  sqlite: [
    'create table `support_answers` (`id` integer not null primary key autoincrement, `title` text not null, `content` mediumtext not null)',
    'create table `support_categories` (`id` integer not null primary key autoincrement, `name` text not null)',
    'create table `support_messages` (`id` integer not null primary key autoincrement, `ticket_id` integer not null, `account_id` integer not null, `message` mediumtext not null, `write_location` integer not null, `creation_date` text not null)',
    'create index `support_messages_ticket_id_index` on `support_messages` (`ticket_id`)',
    'create table `support_tickets` (`id` integer not null primary key autoincrement, `account_id` integer not null, `category_id` integer not null, `title` text not null, `status_id` integer not null, `read_status` integer not null, `update_date` text not null, `creation_date` text not null)',
    'create index `support_tickets_account_id_index` on `support_tickets` (`account_id`)',
    'create index `support_tickets_category_id_index` on `support_tickets` (`category_id`)',
    'create index `support_tickets_status_id_index` on `support_tickets` (`status_id`)',
  ],
  mysql: [
    'create table `support_answers` (`id` int unsigned not null auto_increment primary key, `title` varchar(255) not null, `content` mediumtext not null) default character set utf8mb4 engine = InnoDB',
    'create table `support_categories` (`id` int unsigned not null auto_increment primary key, `name` varchar(100) not null) default character set utf8mb4 engine = InnoDB',
    'create table `support_messages` (`id` int unsigned not null auto_increment primary key, `ticket_id` int not null, `account_id` int not null, `message` mediumtext not null, `write_location` int not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `support_messages` add index `support_messages_ticket_id_index` (`ticket_id`)',
    'create table `support_tickets` (`id` int unsigned not null auto_increment primary key, `account_id` int not null, `category_id` int not null, `title` varchar(255) not null, `status_id` int not null, `read_status` int not null, `update_date` varchar(19) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `support_tickets` add index `support_tickets_account_id_index` (`account_id`)',
    'alter table `support_tickets` add index `support_tickets_category_id_index` (`category_id`)',
    'alter table `support_tickets` add index `support_tickets_status_id_index` (`status_id`)',
  ],
});
