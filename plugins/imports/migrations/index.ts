// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261128123611_imports_init.ts';

export const migrations = [m0];
