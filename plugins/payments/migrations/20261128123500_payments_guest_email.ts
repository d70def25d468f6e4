import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128123500_payments_guest_email',
  sqlite: ['alter table `payments_payments` add column `guest_email` text null'],
  mysql: ['alter table `payments_payments` add `guest_email` varchar(191) null'],
});
