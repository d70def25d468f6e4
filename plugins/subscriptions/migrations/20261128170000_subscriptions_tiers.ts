import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261128170000_subscriptions_tiers',
  sqlite: [
    'alter table `subscriptions_plans` add column `group_name` text null',
    'alter table `subscriptions_subscriptions` add column `next_plan_id` integer null',
  ],
  mysql: ['alter table `subscriptions_plans` add `group_name` varchar(64) null', 'alter table `subscriptions_subscriptions` add `next_plan_id` int null'],
});
