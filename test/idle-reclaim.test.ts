/** Issue 11: the server hands memory back after a busy spell once its event loop goes idle. */
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapSpaceStatistics } from 'node:v8';
import t from 'tap';
import { reclaimWhenIdle, type Reclaimed } from '../core/idle-reclaim.ts';

const WINDOW_MS = 500;
const MiB = 1024 * 1024;

/** The young generation's committed size: a plain full collection leaves it as large as it grew. */
const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;

/** A busy spell's leftovers: tens of megabytes of objects that lived long enough to reach the old generation, now garbage. */
async function busySpell(): Promise<void> {
  let held: object[][] = [];
  for (let i = 0; i < 16; i++) {
    held.push(Array.from({ length: 100_000 }, (_, n) => ({ n })));
    await sleep(0);
  }
  held = [];
}

t.test('after an idle window it collects once, returning the heap a busy spell grew; again only once the heap grows', async (t) => {
  await busySpell();
  const youngBefore = young();
  const reclaimed: (Reclaimed & { young: number })[] = [];
  const stop = reclaimWhenIdle(WINDOW_MS, (r) => reclaimed.push({ ...r, young: young() }));
  t.teardown(stop);
  await sleep(WINDOW_MS * 2.5);
  t.equal(reclaimed.length, 1);
  t.ok(reclaimed[0]!.heapBefore - reclaimed[0]!.heapAfter > 32 * MiB, `the heap shrank by ${(reclaimed[0]!.heapBefore - reclaimed[0]!.heapAfter) / MiB} MiB`);
  t.ok(youngBefore > 4 * MiB && reclaimed[0]!.young <= 2 * MiB, `the young generation shrank from ${youngBefore / MiB} to ${reclaimed[0]!.young / MiB} MiB`);
  await sleep(WINDOW_MS * 2);
  t.equal(reclaimed.length, 1, 'a quiet server whose heap has not grown is left alone');
  await busySpell();
  // The window the spell ran in is busy; the next one is idle.
  await sleep(WINDOW_MS * 3.5);
  t.equal(reclaimed.length, 2, 'the next busy spell is handed back too');
});

t.test('a window with the event loop busy is not idle', async (t) => {
  await busySpell();
  const reclaimed: Reclaimed[] = [];
  const stop = reclaimWhenIdle(WINDOW_MS, (r) => reclaimed.push(r));
  // Work in 5 ms slices for three windows: busy, though each timer still gets its turn.
  const until = Date.now() + WINDOW_MS * 3;
  while (Date.now() < until) {
    const slice = Date.now() + 5;
    while (Date.now() < slice) { /* busy */ }
    await new Promise((r) => setImmediate(r));
  }
  t.equal(reclaimed.length, 0);
  await sleep(WINDOW_MS * 3.5);
  t.equal(reclaimed.length, 1, 'the same heap is handed back once the loop goes idle');
  stop();
});
