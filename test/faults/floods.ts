/**
 * Connection floods for the fault suite: many sockets from a few loopback addresses, each opened
 * again a moment after the server closes it, and `/health` asked from another address all along.
 */
import { seeded } from '../random.ts';
import { rawSocket, getFrom, type RawSocket } from '../sockets.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Flood {
  /** Sockets the flood opened, reconnects included. */
  connects: number;
  /** The flood's sockets open now. */
  live: Set<RawSocket>;
  /** Resolves once the flood has stopped and closed its sockets. */
  done: Promise<void>;
}

/**
 * `count` sockets to 127.0.0.1:port, spread over `from`, each sending `send`, opened about
 * `reconnectMs` from the start and again after it closes (spread at random, as many clients
 * would), until `stopAt`; then every socket is closed.
 */
export function flood(port: number, opts: { from: string[]; count: number; send: string; reconnectMs: number; stopAt: number }): Flood {
  const out: Flood = { connects: 0, live: new Set(), done: Promise.resolve() };
  const random = seeded(opts.count);
  const pause = () => sleep(opts.reconnectMs * (0.5 + random()));
  const slot = async (i: number) => {
    for (await pause(); Date.now() < opts.stopAt; await pause()) {
      out.connects++;
      const s = await rawSocket(port, opts.from[i % opts.from.length], opts.send);
      out.live.add(s);
      await Promise.race([s.closed, sleep(opts.stopAt - Date.now())]);
      out.live.delete(s);
      s.socket.destroy();
    }
  };
  out.done = Promise.all(Array.from({ length: opts.count }, (_, i) => slot(i))).then(() => undefined);
  return out;
}

/** `/health` from `from` every `everyMs` until `stopAt`: the statuses, 0 for no answer within 2 s. */
export async function healthUntil(port: number, from: string, stopAt: number, everyMs = 200): Promise<number[]> {
  const statuses: number[] = [];
  while (Date.now() < stopAt) {
    statuses.push(await getFrom(port, '/health', from, 2000));
    await sleep(everyMs);
  }
  return statuses;
}
