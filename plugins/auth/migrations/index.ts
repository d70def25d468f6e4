// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261121110955_auth_init.ts';
import m1 from './20261123073000_auth_hardening.ts';

export const migrations = [m0, m1];
