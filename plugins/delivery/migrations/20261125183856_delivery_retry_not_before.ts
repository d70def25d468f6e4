import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261125183856_delivery_retry_not_before',
  sqlite: ['alter table `delivery_queue` add column `not_before` text null'],
  mysql: ['alter table `delivery_queue` add `not_before` varchar(19) null'],
});
