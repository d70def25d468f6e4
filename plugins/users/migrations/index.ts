// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261121110536_users_init.ts';
import m1 from './20261123074000_users_binary_keys.ts';

export const migrations = [m0, m1];
