/**
 * Outbound webhooks during the fault storm: two endpoints on receivers in the test process, and the
 * check that every `credits.changed` the storm committed reached each endpoint, once or more, with
 * one webhook-id per event.
 */
import { createConnection } from 'mysql2/promise';
import { RECEIVERS, type Receiver } from '../receiver.ts';
import { KEY } from './storm.ts';

/**
 * Short leases and retries, so rows a kill left claimed go out again within the test; sends in
 * flight per endpoint well above the default, so the receivers' slow answers still let a fast
 * machine's storm (its backlog grows with the machine's speed) drain within the test's wait. The
 * receivers listen on 127.0.0.1, which the server calls only when outbound.allow lists it.
 */
export const WEBHOOK_CONFIG = {
  plugins: { notifications: { enabled: true, concurrency: 16, timeoutMs: 1000, leaseSeconds: 2, pollMs: 200, retryDelaysSeconds: [1, 1, 1, 1, 1] } },
  outbound: RECEIVERS,
};

export async function subscribe(base: string, receivers: Receiver[]): Promise<void> {
  for (const [i, r] of receivers.entries()) {
    const res = await fetch(`${base}/api/admin/notifications/endpoints`, {
      method: 'POST',
      body: JSON.stringify({ name: `receiver ${i}`, url: r.url, events: ['credits.changed'] }),
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    });
    if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${await res.text()}`);
  }
}

/** Ledger rows written from now on are the events owed. */
export async function ledgerMark(url: string): Promise<number> {
  const conn = await createConnection(url);
  const [[row]] = (await conn.query('select coalesce(max(id), 0) as id from credits_ledger')) as unknown as [[{ id: number }]];
  await conn.end();
  return Number(row.id);
}

export async function owed(url: string, since: number): Promise<{ ledger: number; events: number; undelivered: number; statuses: string }> {
  const conn = await createConnection(url);
  const count = async (sql: string, params: unknown[] = []) => Number(((await conn.query(sql, params)) as unknown as [[{ n: number }]])[0][0].n);
  const result = {
    ledger: await count('select count(*) as n from credits_ledger where id > ?', [since]),
    events: await count("select count(*) as n from notifications_events where name = 'credits.changed'"),
    undelivered:
      (await count("select count(*) as n from notifications_deliveries where status <> 'delivered'")) +
      (await count('select count(*) as n from notifications_events where fanned = 0')),
    statuses: JSON.stringify((await conn.query('select status, count(*) as n, max(attempts) as tries from notifications_deliveries group by status'))[0]),
  };
  await conn.end();
  return result;
}
