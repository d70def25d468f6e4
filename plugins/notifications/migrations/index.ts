// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261127105659_notifications_init.ts';

export const migrations = [m0];
