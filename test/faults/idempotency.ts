/** A credit send with an Idempotency-Key, and what the ledger holds of it, for the fault suite. */
import { createConnection } from 'mysql2/promise';
import { KEY } from './storm.ts';

/** Sends `amount` from `from` to `to` under `key`; rejects when the connection is cut. */
export async function keyedSend(
  base: string,
  key: string,
  from: string,
  to: string,
  amount: string,
): Promise<{ status: number; replayed: string | null; json: any }> {
  const res = await fetch(`${base}/api/credits/send`, {
    method: 'POST',
    signal: AbortSignal.timeout(10_000),
    headers: { 'x-api-key': KEY, 'idempotency-key': key, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ sender_username: from, target_username: to, amount }).toString(),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), json: await res.json() };
}

/** The transfers in the ledger (a send writes two rows sharing one transfer id), and each user's balance in cents. */
export async function transfers(databaseUrl: string): Promise<{ transfers: number; balances: Record<string, number> }> {
  const conn = await createConnection({ uri: databaseUrl });
  try {
    const [[row]] = (await conn.query('select count(distinct transfer_id) as n from credits_ledger where transfer_id is not null')) as [
      { n: number }[],
      unknown,
    ];
    const [wallets] = (await conn.query('select a.username, w.balance from credits_wallets w join users_accounts a on a.id = w.user_id')) as [
      { username: string; balance: number }[],
      unknown,
    ];
    return { transfers: Number(row!.n), balances: Object.fromEntries(wallets.map((w) => [w.username, Number(w.balance)])) };
  } finally {
    await conn.end();
  }
}
