import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128123000_store_guest_email',
  sqlite: ['alter table `store_orders` add column `guest_email` text null'],
  mysql: ['alter table `store_orders` add `guest_email` varchar(191) null'],
});
