import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125183955_payments_direct_purchases',
  sqlite: ['alter table `payments_payments` add column `guest_name` text null', 'alter table `payments_payments` add column `purchase_lines` text null'],
  mysql: ['alter table `payments_payments` add `guest_name` varchar(16) null, add `purchase_lines` text null'],
});
