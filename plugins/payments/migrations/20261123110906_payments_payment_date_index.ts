import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261123110906_payments_payment_date_index',
  sqlite: ['create index `payments_payments_creation_date_index` on `payments_payments` (`creation_date`)'],
  mysql: ['alter table `payments_payments` add index `payments_payments_creation_date_index` (`creation_date`)'],
});
