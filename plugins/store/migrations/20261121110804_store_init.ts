import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261121110804_store_init',
  sqlite: [
    'create table `store_categories` (`id` integer not null primary key autoincrement, `parent_id` integer not null, `name` text not null, `slug` text not null, `image_id` text not null, `image_type` text not null, `priority` integer not null, `game_status` integer not null, `game_title` text not null, `game_description` text not null, `game_item` text not null, `is_active` integer not null)',
    'create index `store_categories_parent_id_index` on `store_categories` (`parent_id`)',
    'create table `store_orders` (`id` integer not null primary key autoincrement, `account_id` integer not null, `type` text not null, `status` text not null, `subtotal` bigint not null, `discount` bigint not null, `total` bigint not null, `earnings` bigint not null, `cashback` bigint not null, `credit` bigint not null, `currency` text not null, `payment_api` text not null, `payment_id` text null, `creation_date` text not null)',
    'create index `store_orders_account_id_index` on `store_orders` (`account_id`)',
    'create unique index `store_orders_payment_api_payment_id_unique` on `store_orders` (`payment_api`, `payment_id`)',
    'create table `store_order_items` (`id` integer not null primary key autoincrement, `order_id` integer not null, `product_id` integer not null, `product_name` text not null, `quantity` integer not null, `unit_price` integer not null, `unit_total` integer not null, `variables` text not null)',
    'create index `store_order_items_order_id_index` on `store_order_items` (`order_id`)',
    'create table `store_products` (`id` integer not null primary key autoincrement, `category_id` integer not null, `give_role_id` integer not null, `name` text not null, `image_id` text not null, `image_type` text not null, `details` text not null, `price` integer not null, `discounted_price` integer not null, `discount_expiry_date` text not null, `duration` integer not null, `stock` integer not null, `priority` integer not null, `is_featured` integer not null, `game_status` integer not null, `game_title` text not null, `game_description` text not null, `game_item` text not null, `is_active` integer not null, `creation_date` text not null)',
    'create index `store_products_category_id_index` on `store_products` (`category_id`)',
    'create table `store_product_variables` (`id` integer not null primary key autoincrement, `product_id` integer not null, `name` text not null, `required` integer not null, `allowed_values` text not null, `position` integer not null)',
    'create unique index `store_product_variables_product_id_name_unique` on `store_product_variables` (`product_id`, `name`)',
  ],
  mysql: [
    'create table `store_categories` (`id` int unsigned not null auto_increment primary key, `parent_id` int not null, `name` varchar(128) not null, `slug` varchar(128) not null, `image_id` varchar(64) not null, `image_type` varchar(16) not null, `priority` int not null, `game_status` tinyint(1) not null, `game_title` varchar(255) not null, `game_description` text not null, `game_item` varchar(128) not null, `is_active` tinyint(1) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_categories` add index `store_categories_parent_id_index` (`parent_id`)',
    'create table `store_orders` (`id` int unsigned not null auto_increment primary key, `account_id` int not null, `type` varchar(16) not null, `status` varchar(16) not null, `subtotal` bigint not null, `discount` bigint not null, `total` bigint not null, `earnings` bigint not null, `cashback` bigint not null, `credit` bigint not null, `currency` varchar(3) not null, `payment_api` varchar(64) not null, `payment_id` varchar(128) null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_orders` add index `store_orders_account_id_index` (`account_id`)',
    'alter table `store_orders` add unique `store_orders_payment_api_payment_id_unique` (`payment_api`, `payment_id`)',
    'create table `store_order_items` (`id` int unsigned not null auto_increment primary key, `order_id` int not null, `product_id` int not null, `product_name` varchar(128) not null, `quantity` int not null, `unit_price` int not null, `unit_total` int not null, `variables` text not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_order_items` add index `store_order_items_order_id_index` (`order_id`)',
    'create table `store_products` (`id` int unsigned not null auto_increment primary key, `category_id` int not null, `give_role_id` int not null, `name` varchar(128) not null, `image_id` varchar(64) not null, `image_type` varchar(16) not null, `details` text not null, `price` int not null, `discounted_price` int not null, `discount_expiry_date` varchar(19) not null, `duration` int not null, `stock` int not null, `priority` int not null, `is_featured` tinyint(1) not null, `game_status` tinyint(1) not null, `game_title` varchar(255) not null, `game_description` text not null, `game_item` varchar(128) not null, `is_active` tinyint(1) not null, `creation_date` varchar(19) not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_products` add index `store_products_category_id_index` (`category_id`)',
    'create table `store_product_variables` (`id` int unsigned not null auto_increment primary key, `product_id` int not null, `name` varchar(64) not null, `required` tinyint(1) not null, `allowed_values` text not null, `position` int not null) default character set utf8mb4 engine = InnoDB',
    'alter table `store_product_variables` add unique `store_product_variables_product_id_name_unique` (`product_id`, `name`)',
  ],
});
