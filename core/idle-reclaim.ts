/**
 * Hands memory back to the machine once the server goes quiet (`server.idleReclaimSeconds`): V8
 * keeps the pages the busiest moment needed, and a community's server is idle most of the day beside the game server. One memory-reducing collection (V8's
 * "last resort") pauses the
 * server, hence it waits for idleness and for the heap to have grown. What it gives back:
 * docs/performance.md.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** Busier than this share of a sample (requests, timers) and the event loop does not count as idle. */
const IDLE_UTILIZATION = 0.02;
/** The heap must have grown this much since the last reclaim, so a quiet server is not collected again and again. */
const MIN_GROWTH_BYTES = 16 * 1024 * 1024;

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * V8's memory-reducing collection, offered only to code that can call `gc`: `--expose-gc` given on
 * the command line (npm start and the image pass it), never switched on at run time, which Node's
 * documentation warns against. Undefined without the flag.
 */
export function memoryReducingGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: Gc }).gc;
  return typeof gc === 'function' ? () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) : undefined;
}

export interface Reclaimed {
  heapBefore: number;
  heapAfter: number;
  ms: number;
}

/**
 * Once the event loop has been idle for `idleMs` on end and the heap grew since the last reclaim,
 * reclaims and calls `done`. Idleness is sampled every third of `idleMs`, so the collection comes
 * between `idleMs` and a third more after the last busy moment, whenever the busy spell ended.
 * Returns the stop function.
 */
export function reclaimWhenIdle(gc: () => void, idleMs: number, done: (r: Reclaimed) => void): () => void {
  let floor = 0;
  let idleSince = performance.now();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const at = performance.now();
    if (performance.eventLoopUtilization(last).utilization >= IDLE_UTILIZATION) idleSince = at;
    const heapBefore = getHeapStatistics().total_heap_size;
    if (at - idleSince >= idleMs && heapBefore >= floor + MIN_GROWTH_BYTES) {
      gc();
      floor = getHeapStatistics().total_heap_size;
      done({ heapBefore, heapAfter: floor, ms: Math.round(performance.now() - at) });
    }
    // The next sample starts after the collection, so its pause does not count as busy.
    last = performance.eventLoopUtilization();
  }, idleMs / 3);
  timer.unref();
  return () => clearInterval(timer);
}
