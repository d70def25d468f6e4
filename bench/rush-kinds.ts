/**
 * `BENCH_RUSH_KINDS=1`: what each kind of the rush's requests costs the server and the baseline, in
 * CPU time per request, each kind walked alone (buys and gateway checkouts before polls and acks,
 * which deliver what they queued) at a few connections, with what each leaves behind to do (the webhooks' sends) until the
 * receivers get no more. Where the rush's capacity gap comes from, kind by kind.
 */
import type { ChildProcess } from 'node:child_process';
import { cpuTime, seconds } from './harness.ts';
import type { RushItem, RushKind } from './rush-mix.ts';

const GROUPS: RushKind[][] = [['page'], ['buy'], ['checkout', 'complete'], ['poll', 'ack'], ['dashboard']];
const CONNECTIONS = 4;

export interface Side {
  name: string;
  url: string;
  sequence: RushItem[];
  proc: ChildProcess;
}

type Walk = (url: string, sequence: RushItem[], connections: number, duration: number) => Promise<{ requests: number }>;

/** Resolves once no webhook has arrived for a second (`sends` counts them; at most two minutes). */
export async function settled(sends: () => number): Promise<void> {
  for (let i = 0; i < 120; i++) {
    const before = sends();
    await new Promise((r) => setTimeout(r, 1000));
    if (sends() === before) return;
  }
}

/** One line per kind: CPU µs per request on each side, and the server's ÷ the baseline's. */
export async function kindCosts(sides: Side[], walk: Walk, sends: () => number): Promise<string[]> {
  const lines = [`| kinds | ${sides.map((s) => `${s.name} µs/request`).join(' | ')} | server ÷ baseline |`, '|---|---|---|---|'];
  for (const group of GROUPS) {
    const costs: number[] = [];
    for (const side of sides) {
      const sequence = side.sequence.filter((item) => group.includes(item.kind));
      if (!sequence.length) continue;
      await walk(side.url, sequence, CONNECTIONS, 1);
      const before = cpuTime(side.proc.pid!);
      const { requests } = await walk(side.url, sequence, CONNECTIONS, seconds);
      // The work a request leaves behind (its webhooks' sends) is counted too: until the receivers get no more.
      await settled(sends);
      costs.push((cpuTime(side.proc.pid!) - before) / Math.max(1, requests));
    }
    const [server, baseline] = costs;
    lines.push(
      `| ${group.join(' + ')} | ${costs.map((c) => c.toFixed(0)).join(' | ')}${baseline === undefined ? ' | (none)' : ''} | ${baseline ? (server! / baseline).toFixed(2) : ''} |`,
    );
  }
  return lines;
}
