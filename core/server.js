/**
 * `npm start`. Node keeps what it makes of each module (types stripped, bytecode) in a cache
 * folder, so later starts skip that work: faster, and less memory. The cache must be on before
 * the modules load, hence the dynamic import. This one file is JavaScript, not TypeScript: Node
 * strips types with a WebAssembly compiler that it loads for the first .ts file it meets, and
 * that is this file; here in JavaScript it is never loaded, which keeps about 16 MiB out of every
 * server process.
 *
 * `npm start` (and the Docker image) run it with two V8 flags, each measured by the whole bench
 * (README, Benchmarks), which fix V8's young generation at 2 x 16 MiB:
 * - `--max-semi-space-size=16`: V8 otherwise lets it grow to 64 MiB under load and keeps it.
 *   Capped at 2 x 16 MiB, the server ended the bench some 75 MiB smaller and no slower; at 2 x 8
 *   MiB it was 20 MiB smaller still, but big answers (the ticket list, the plugin's queue) were
 *   promoted to the old generation more and ran slower.
 * - `--min-semi-space-size=16`: the memory-reducing collection the server runs when it goes idle
 *   (core/idle-reclaim.ts) otherwise shrinks it to 1 MiB, and the next busy spell pays while it
 *   grows back: objects of requests in flight are promoted and collected as old ones. With the
 *   idle reclaim running between the bench's rounds, MariaDB's credits send then spent 524 µs of
 *   CPU per request and the buy 880 (0.80 of the baseline each); with this flag 417 and 789 (0.99
 *   and 0.92), and the server still ended the bench at 133 MiB.
 *
 * The old generation's growth is left to V8, and the idle reclaim hands it back. Capped
 * (`--heap-growing-percent=50`), the server ended the MariaDB bench some 45 MiB smaller (208
 * against 254 MiB, when the reclaim still waited for a whole 10 s window), but the MariaDB
 * listing, whose rows arrive over several socket reads and outlive young collections, spent 8.7
 * ms of CPU per request in place of 4.6 (0.65 of the baseline against 0.91).
 */
import { enableCompileCache, flushCompileCache } from 'node:module';

enableCompileCache();
await import('./main.ts');
// Node holds every module's cache entry in memory (some 9 MiB) until it writes them at exit;
// writing them now, once the server listens, lets it free them.
flushCompileCache();
