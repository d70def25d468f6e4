/**
 * Hands memory back to the machine once the server goes quiet. V8 keeps what the busiest moment
 * needed: a young generation of 2 x 16 MiB (it grows there during start-up already) and the old
 * generation's freed pages. A community's server is idle most of the day, often beside the game
 * server on one small machine, so after a busy spell with a whole window of idle event loop it
 * runs one memory-reducing collection (V8's "last resort": full collections until nothing more is
 * freed, the young generation shrunk, pooled pages returned). Measured after the whole bench on
 * SQLite: 189 -> 122 MiB resident, in one pause of about 100 ms, which is why it waits for an
 * idle window and for the heap to have grown since the last one.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Busier than this share of a window (requests, timers) and the window does not count as idle. */
const IDLE_UTILIZATION = 0.02;
/** The heap must have grown this much since the last reclaim, so a quiet server is not collected again and again. */
const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * V8's collector as a function, without exposing `gc` to every module: the flag is on only while
 * a fresh context is made, the way jest's leak detector does it.
 */
function memoryReducingGc(): () => void {
  const exposed = typeof (globalThis as { gc?: unknown }).gc === 'function';
  if (!exposed) setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as Gc;
  if (!exposed) setFlagsFromString('--no-expose-gc');
  return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

export interface Reclaimed { heapBefore: number; heapAfter: number; ms: number }

/**
 * Checks every `windowMs` whether the event loop was idle the whole window and the heap grew since
 * the last reclaim; if so, reclaims and calls `done`. Returns the stop function.
 */
export function reclaimWhenIdle(windowMs: number, done: (r: Reclaimed) => void): () => void {
  const gc = memoryReducingGc();
  let floor = 0;
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const busy = performance.eventLoopUtilization(last).utilization;
    const heapBefore = getHeapStatistics().total_heap_size;
    if (busy < IDLE_UTILIZATION && heapBefore >= floor + MIN_GROWTH_BYTES) {
      const start = performance.now();
      gc();
      floor = getHeapStatistics().total_heap_size;
      done({ heapBefore, heapAfter: floor, ms: Math.round(performance.now() - start) });
    }
    // The next window starts after the collection, so its pause does not count as busy.
    last = performance.eventLoopUtilization();
  }, windowMs);
  timer.unref();
  return () => clearInterval(timer);
}
