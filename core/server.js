/**
 * `npm start`. The compile cache (types stripped, bytecode) makes later starts faster and smaller;
 * it must be on before the modules load, hence the dynamic import. This file is JavaScript so
 * that Node never loads its TypeScript stripper here. `npm start`'s V8 flags, and the figures
 * behind each choice: docs/performance.md.
 */
import { enableCompileCache, flushCompileCache } from 'node:module';

enableCompileCache();
await import('./main.ts');
// Node holds every module's cache entry in memory until it writes them at exit; writing them
// now, once the server listens, lets it free them.
flushCompileCache();
