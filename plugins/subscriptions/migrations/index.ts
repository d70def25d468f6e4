// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261128122111_subscriptions_init.ts';
import m1 from './20261128154303_subscriptions_gateways.ts';
import m2 from './20261128161619_subscriptions_reminders.ts';
import m3 from './20261128170000_subscriptions_tiers.ts';

export const migrations = [m0, m1, m2, m3];
