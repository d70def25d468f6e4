import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261127103928_support_category_tickets',
  sqlite: [
    'alter table `support_categories` add column `tickets` integer not null default 0',
    // Tickets opened before the count existed are counted in.
    'update `support_categories` set `tickets` = (select count(*) from `support_tickets` where `support_tickets`.`category_id` = `support_categories`.`id`)',
  ],
  mysql: [
    'alter table `support_categories` add `tickets` int not null default 0',
    // Tickets opened before the count existed are counted in.
    'update `support_categories` set `tickets` = (select count(*) from `support_tickets` where `support_tickets`.`category_id` = `support_categories`.`id`)',
  ],
});
