/**
 * `npm start`. Node keeps what it makes of each module (types stripped, bytecode) in a cache
 * folder, so later starts skip that work: faster, and less memory. The cache must be on before
 * the modules load, hence the dynamic import. This one file is JavaScript, not TypeScript: Node
 * strips types with a WebAssembly compiler that it loads for the first .ts file it meets, and
 * that is this file; here in JavaScript it is never loaded, which keeps about 16 MiB out of every
 * server process.
 *
 * `npm start` (and the Docker image) run it with two V8 flags, each measured by the whole bench
 * (README, Benchmarks):
 * - `--max-semi-space-size=16`: V8 otherwise lets its young generation grow to 64 MiB under load
 *   and keeps it. Capped at 2 x 16 MiB, the server ended the bench some 75 MiB smaller and no slower;
 *   at 2 x 8 MiB it was 20 MiB smaller still, but big answers (the ticket list, the plugin's
 *   queue) were promoted to the old generation more and ran slower.
 * - `--heap-growing-percent=50`: after a full collection V8 otherwise let the old generation grow
 *   to up to four times what was live before collecting again (35 -> 156 MiB in one scenario),
 *   and kept the freed pages pooled; without the flag the server ended the bench at 267 MiB.
 *   The growth allowed trades memory against the MariaDB listing, whose rows arrive over several
 *   socket reads, outlive young collections, and fill the old generation. Full bench runs, RSS
 *   after it on SQLite / MariaDB, and the MariaDB listing's ratio to the baseline:
 *   25%: 176 / 191 MiB, 0.58;  50%: 179 / 212 MiB, 0.73;  100%: 200 / 222 MiB, 0.77.
 */
import { enableCompileCache, flushCompileCache } from 'node:module';

enableCompileCache();
await import('./main.ts');
// Node holds every module's cache entry in memory (some 9 MiB) until it writes them at exit;
// writing them now, once the server listens, lets it free them.
flushCompileCache();
