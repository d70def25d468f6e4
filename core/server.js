/**
 * `npm start`. Node keeps what it makes of each module (types stripped, bytecode) in a cache
 * folder, so later starts skip that work: faster, and less memory. The cache must be on before
 * the modules load, hence the dynamic import. This one file is JavaScript, not TypeScript: Node
 * strips types with a WebAssembly compiler that it loads for the first .ts file it meets, and
 * that is this file; here in JavaScript it is never loaded, which keeps about 16 MiB out of every
 * server process.
 *
 * `npm start` (and the Docker image) run it with `--max-semi-space-size=16`: V8 otherwise lets its
 * young generation grow to 64 MiB under load and keeps it. Capped at 32 MiB, the server ended the
 * bench some 75 MiB smaller and no slower (README, Benchmarks).
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./main.ts');
