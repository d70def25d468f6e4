/**
 * notifications/webhooks: what two subscribed webhook endpoints cost the hot writes. A buy and a
 * credits send are measured with both endpoints switched off, then on, round after round (A/B
 * interleaved, so a slow minute of the machine weighs on both), on the server as shipped; each
 * buy and send queues four deliveries (two events, two endpoints). The receivers are HTTP
 * servers in the bench's own process; after each "on" run the backlog drains before the next run.
 * The bare baseline is measured the same way: with the endpoints on, it writes the same events by
 * hand in each write's transaction (bench/base-db.ts, `outbox`), so its own on ÷ off is the cost
 * of the durable hand-off itself, and the server's "on" against the baseline's is the comparison
 * every other scenario makes.
 */
import { startReceiver, type Receiver } from '../test/receiver.ts';
import { SUBSCRIPTIONS_MS } from './base-db.ts';
import { Api, type BenchNote, type BenchRequest, type Load } from './scenario.ts';

type Measured = Awaited<ReturnType<Load>>;

const PLAYERS = 20;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const best = (runs: Measured[]) => Math.max(...runs.map((m) => m.rps));

/** `a` ÷ `b` by their best rounds, then each round's, then the rates and CPU per request of both. */
function ratio(a: Measured[], b: Measured[]): string {
  const each = a.map((m, i) => (m.rps / b[i]!.rps).toFixed(2)).join(', ');
  const rates = `${b.map((m) => m.rps.toFixed(0)).join('/')} → ${a.map((m) => m.rps.toFixed(0)).join('/')} req/s`;
  const cpu = `CPU ${b.map((m) => m.cpuUs.toFixed(0)).join('/')} → ${a.map((m) => m.cpuUs.toFixed(0)).join('/')} µs`;
  return `**${(best(a) / best(b)).toFixed(2)}** (rounds ${each}; ${rates}, ${cpu})`;
}

/** Waits until the receivers have taken nothing new for a second; returns how long that took. */
async function drained(receivers: Receiver[]): Promise<number> {
  const started = Date.now();
  let seen = -1;
  for (;;) {
    const now = receivers.reduce((n, r) => n + r.received.length, 0);
    if (now === seen) return Date.now() - started - 1000;
    seen = now;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export const notes: BenchNote[] = [
  {
    name: 'notifications/webhooks',
    async measure(api, load, bare) {
      const ids: string[] = [];
      await Api.batched(PLAYERS, 10, async (i) => {
        ids[i] = await api.player(6000 + i, `hooked${i}`, 1_000_000_00);
      });
      const category = await api.create('/api/admin/store/categories', { name: 'Hooked' });
      const product = await api.create('/api/admin/store/products', { categoryID: category, name: 'Hook', price: '0.01' });
      const buys: BenchRequest[] = ids.map((userID) => ({
        method: 'POST',
        path: '/api/store/buy',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userID, products: [{ id: product, quantity: 1 }] }),
      }));
      const sends: BenchRequest[] = ids.map((_, i) => ({
        method: 'POST',
        path: '/api/credits/send',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `sender_username=hooked${i}&target_username=hooked${(i + 1) % PLAYERS}&amount=0.01`,
      }));
      const receivers = [await startReceiver(), await startReceiver()];
      try {
        const endpoints: string[] = [];
        for (const [i, r] of receivers.entries()) {
          endpoints.push(
            await api.create('/api/admin/notifications/endpoints', {
              name: `receiver ${i}`,
              url: r.url,
              events: ['store.order.completed', 'credits.changed'],
              active: false,
            }),
          );
        }
        const switched = (active: boolean) => Promise.all(endpoints.map((id) => api.send('PATCH', `/api/admin/notifications/endpoints/${id}`, { active })));
        const lines: string[] = [];
        // Past the baseline's subscription cache, so it sees a switch before its run.
        const settle = () => new Promise((r) => setTimeout(r, SUBSCRIPTIONS_MS + 500));
        for (const [name, requests] of [
          ['store/buy', buys],
          ['credits/send', sends],
        ] as const) {
          const runs: Record<'off' | 'on' | 'bareOff' | 'bareOn', Measured[]> = { off: [], on: [], bareOff: [], bareOn: [] };
          const deliveries: number[] = [];
          const drains: number[] = [];
          // The endpoints are off at each round's start: made inactive, and switched off for the baseline's last run.
          for (let round = 0; round < ROUNDS; round++) {
            runs.off.push(await load(requests));
            await switched(true);
            const before = receivers.reduce((n, r) => n + r.received.length, 0);
            runs.on.push(await load(requests));
            deliveries.push(receivers.reduce((n, r) => n + r.received.length, 0) - before);
            drains.push(await drained(receivers));
            await settle();
            runs.bareOn.push(await bare(requests));
            await switched(false);
            await settle();
            runs.bareOff.push(await bare(requests));
          }
          lines.push(
            `${name} with two endpoints on ÷ off: server ${ratio(runs.on, runs.off)}, baseline ${ratio(runs.bareOn, runs.bareOff)}; ` +
              `server on ÷ baseline on ${ratio(runs.on, runs.bareOn)}; ${deliveries.join(', ')} deliveries during the server's "on" runs, ` +
              `backlog drained ${drains.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s after each`,
          );
        }
        return `notifications: ${lines.join('. ')}.`;
      } finally {
        await Promise.all(receivers.map((r) => r.close()));
      }
    },
  },
];
