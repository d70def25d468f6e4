// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261128123611_imports_init.ts';
import m1 from './20261128130441_imports_runs.ts';

export const migrations = [m0, m1];
