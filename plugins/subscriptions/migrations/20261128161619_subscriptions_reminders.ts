import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128161619_subscriptions_reminders',
  sqlite: ['alter table `subscriptions_subscriptions` add column `reminded_period` integer not null default 0'],
  mysql: ['alter table `subscriptions_subscriptions` add `reminded_period` int not null default 0'],
});
