/**
 * Game servers fetching purchases during the fault storm: pollers that mix the plugin's HTTP mode
 * (queue + validate) with claim/ack, one claimer that never acks, and the check that every
 * purchase's commands reached a game server once.
 */
import { createConnection } from 'mysql2/promise';
import { KEY, api } from './storm.ts';

/** Two commands per purchase, each naming its order: a command seen twice is a double delivery. */
export async function seedDelivery(base: string, productId: string): Promise<string> {
  const server = await api(base, '/api/admin/delivery/servers', { name: 'Survival' });
  if (server.status !== 201) throw new Error(`server: ${server.status} ${JSON.stringify(server.json)}`);
  for (const command of ['give {username} key #{orderID}', 'say {username} bought #{orderID}']) {
    const res = await api(base, `/api/admin/store/products/${productId}/commands`, { serverID: String(server.json.id), command, trigger: 'purchase' });
    if (res.status !== 201) throw new Error(`command: ${res.status} ${JSON.stringify(res.json)}`);
  }
  return String(server.json.token);
}

export interface Deliveries {
  /** Every command handed out for good: validated, or claimed and its ack settled. */
  ran: string[];
  /** Queue ids in validate or ack requests the kill cut off: done in the database, maybe without the answer arriving. */
  uncertain: Set<string>;
  /** Requests that failed on the network (the kill). */
  cutOff: number;
}

type Mode = 'validate' | 'claim' | 'claim-no-ack';

/** The plugin's own request: urlencoded with unencoded bracket keys. */
async function validateIds(base: string, token: string, ids: string[]) {
  const body = [`token=${encodeURIComponent(token)}`, ...ids.map((id, i) => `commands[${i}]=${id}`)].join('&');
  const res = await fetch(`${base}/api/command-logs/validate`, {
    method: 'POST',
    body,
    signal: AbortSignal.timeout(10_000),
    headers: { 'x-api-key': KEY, 'content-type': 'application/x-www-form-urlencoded' },
  });
  return { status: res.status, json: (await res.json()) as { commands: { command: string }[] } };
}

async function poll(base: string, token: string, mode: Mode, out: Deliveries): Promise<void> {
  if (mode === 'validate') {
    const queue = await fetch(`${base}/api/command-logs/${token}/queue`, {
      headers: { 'x-api-key': KEY, 'content-type': 'application/x-www-form-urlencoded' },
      signal: AbortSignal.timeout(10_000),
    });
    const rows = (await queue.json()) as { id: string; status: string }[];
    const ids = rows.filter((r) => r.status === 'sending' || r.status === 'error').map((r) => r.id);
    if (ids.length === 0) return;
    const res = await validateIds(base, token, ids).catch((err: unknown) => {
      for (const id of ids) out.uncertain.add(id);
      throw err;
    });
    if (res.status === 200) for (const c of res.json.commands) out.ran.push(c.command);
    return;
  }
  const claimed = await api(base, '/api/delivery/claim', { token, limit: '10' });
  if (claimed.status !== 200 || mode === 'claim-no-ack') return;
  const ids = (claimed.json.commands as { id: string }[]).map((c) => c.id);
  if (ids.length === 0) return;
  const form: Record<string, string> = { token, result: 'done' };
  ids.forEach((id, i) => {
    form[`ids[${i}]`] = id;
  });
  const acked = await api(base, '/api/delivery/ack', form).catch((err: unknown) => {
    for (const id of ids) out.uncertain.add(id);
    throw err;
  });
  // Only what the server settled counts as run: a row whose lease lapsed goes to another poller.
  const settled = new Set<string>(acked.json.ids ?? []);
  for (const c of claimed.json.commands as { id: string; command: string }[]) if (settled.has(c.id)) out.ran.push(c.command);
}

/** Five pollers until `until` resolves and the queue is empty: two validate, two claim/ack, one claims and never acks. */
export async function pollers(base: () => string, token: string, until: Promise<unknown>, drained: () => Promise<boolean>): Promise<Deliveries> {
  const out: Deliveries = { ran: [], uncertain: new Set(), cutOff: 0 };
  let stormOver = false;
  void until.then(() => {
    stormOver = true;
  });
  const modes: Mode[] = ['validate', 'validate', 'claim', 'claim', 'claim-no-ack'];
  const deadline = () => stormOver && Date.now() > stopAt;
  let stopAt = Infinity;
  void until.then(() => {
    stopAt = Date.now() + 30_000;
  });
  await Promise.all(
    modes.map(async (mode) => {
      while (!deadline()) {
        if (stormOver && mode !== 'claim-no-ack' && (await drained().catch(() => false))) return;
        if (stormOver && mode === 'claim-no-ack') return;
        try {
          await poll(base(), token, mode, out);
        } catch {
          out.cutOff++;
          await new Promise((r) => setTimeout(r, 50));
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    }),
  );
  return out;
}

/** Whether every queued row is settled. */
export async function queueDrained(databaseUrl: string): Promise<boolean> {
  const conn = await createConnection({ uri: databaseUrl });
  try {
    const [rows] = await conn.query("select count(*) as n from delivery_queue where status in ('waiting', 'claimed')");
    return Number((rows as { n: number }[])[0]!.n) === 0;
  } finally {
    await conn.end();
  }
}

/** Every completed purchase's two commands ran once; none twice; none left over. */
export async function checkDeliveries(databaseUrl: string, d: Deliveries): Promise<{ problems: string[]; counts: Record<string, number> }> {
  const conn = await createConnection({ uri: databaseUrl });
  const problems: string[] = [];
  try {
    const [orders] = await conn.query("select o.id, u.username from store_orders o join users_accounts u on u.id = o.account_id where o.type = 'credit'");
    const expected = new Set<string>();
    for (const o of orders as { id: number; username: string }[]) {
      expected.add(`give ${o.username} key #${o.id}`);
      expected.add(`say ${o.username} bought #${o.id}`);
    }
    const seen = new Map<string, number>();
    for (const c of d.ran) seen.set(c, (seen.get(c) ?? 0) + 1);
    for (const [c, n] of seen) if (n > 1) problems.push(`"${c}" ran ${n} times`);
    for (const c of seen.keys()) if (!expected.has(c)) problems.push(`"${c}" ran for no purchase`);
    const [queue] = await conn.query('select status, count(*) as n from delivery_queue group by status');
    const byStatus = Object.fromEntries((queue as { status: string; n: number }[]).map((r) => [r.status, Number(r.n)]));
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    if (total !== expected.size) problems.push(`${expected.size} commands expected for ${expected.size / 2} purchases but ${total} were queued`);
    if (byStatus.waiting || byStatus.claimed || byStatus.failed) problems.push(`left over: ${JSON.stringify(byStatus)}`);
    // A row may be done without its command having arrived only when the kill cut off the answer that carried it.
    const [rows] = await conn.query('select id, command, tries from delivery_queue');
    const retried = (rows as { tries: number }[]).filter((r) => Number(r.tries) > 0).length;
    if (retried === 0) problems.push('no lease ever lapsed: the never-acking poller took nothing');
    const idOf = new Map((rows as { id: number; command: string }[]).map((r) => [r.command, String(r.id)]));
    const missing = [...expected].filter((c) => !seen.has(c));
    for (const c of missing) if (!d.uncertain.has(idOf.get(c) ?? '')) problems.push(`"${c}" never ran and no cut-off answer explains it`);
    return { problems, counts: { purchases: expected.size / 2, ran: d.ran.length, retried, cutOffAnswers: missing.length, cutOff: d.cutOff, ...byStatus } };
  } finally {
    await conn.end();
  }
}
