/**
 * notifications/webhooks: what two subscribed webhook endpoints cost the hot writes. A buy and a
 * credits send are measured with both endpoints switched off, then on, round after round (A/B
 * interleaved, so a slow minute of the machine weighs on both), on the server as shipped; each
 * buy and send queues four deliveries (two events, two endpoints). The receivers are HTTP
 * servers in the bench's own process; after each "on" run the backlog drains before the next run.
 */
import { startReceiver, type Receiver } from '../test/receiver.ts';
import { Api, type BenchNote, type BenchRequest } from './scenario.ts';

const PLAYERS = 20;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

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

export const notes: BenchNote[] = [{
  name: 'notifications/webhooks',
  async measure(api, load) {
    const ids: string[] = [];
    await Api.batched(PLAYERS, 10, async (i) => { ids[i] = await api.player(6000 + i, `hooked${i}`, 1_000_000_00); });
    const category = await api.create('/api/admin/store/categories', { name: 'Hooked' });
    const product = await api.create('/api/admin/store/products', { categoryID: category, name: 'Hook', price: '0.01' });
    const buys: BenchRequest[] = ids.map((userID) => ({
      method: 'POST', path: '/api/store/buy', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userID, products: [{ id: product, quantity: 1 }] }),
    }));
    const sends: BenchRequest[] = ids.map((_, i) => ({
      method: 'POST', path: '/api/credits/send', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `sender_username=hooked${i}&target_username=hooked${(i + 1) % PLAYERS}&amount=0.01`,
    }));
    const receivers = [await startReceiver(), await startReceiver()];
    try {
      const endpoints: string[] = [];
      for (const [i, r] of receivers.entries()) {
        endpoints.push(await api.create('/api/admin/notifications/endpoints', {
          name: `receiver ${i}`, url: r.url, events: ['store.order.completed', 'credits.changed'], active: false,
        }));
      }
      const switched = (active: boolean) => Promise.all(endpoints.map((id) => api.send('PATCH', `/api/admin/notifications/endpoints/${id}`, { active })));
      const lines: string[] = [];
      for (const [name, requests] of [['store/buy', buys], ['credits/send', sends]] as const) {
        const ratios: string[] = [];
        let bestOff = 0;
        let bestOn = 0;
        const drains: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          await switched(false);
          const off = await load(requests);
          await switched(true);
          const before = receivers.reduce((n, r) => n + r.received.length, 0);
          const on = await load(requests);
          const during = receivers.reduce((n, r) => n + r.received.length, 0) - before;
          drains.push(await drained(receivers));
          ratios.push(`${(on.rps / off.rps).toFixed(2)} (${off.rps.toFixed(0)} → ${on.rps.toFixed(0)} req/s, `
            + `${off.cpuUs.toFixed(0)} → ${on.cpuUs.toFixed(0)} µs CPU; ${during} deliveries during the run)`);
          bestOff = Math.max(bestOff, off.rps);
          bestOn = Math.max(bestOn, on.rps);
        }
        lines.push(`${name} with two endpoints on ÷ off: best rounds **${(bestOn / bestOff).toFixed(2)}**; each round ${ratios.join(', ')}; `
          + `backlog drained ${drains.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s after each run`);
      }
      return `notifications: ${lines.join('. ')}.`;
    } finally {
      await Promise.all(receivers.map((r) => r.close()));
    }
  },
}];
