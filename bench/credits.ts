/**
 * `credits/send`, urlencoded as the game plugin sends it: transfers among a ring of users, each
 * neighbour pair paying in both directions, so requests contend for the same wallets. The baseline
 * does the minimal safe transfer by hand: both users in one lookup, then in one transaction the
 * conditional debit, the credit (wallets taken in ascending id order), the two ledger rows and,
 * when a webhook endpoint subscribes to them, their two events.
 */
import { randomUUID } from 'node:crypto';
import { moneyNumber, now, parseMoney } from '../core/format.ts';
import { BaseDb } from './base-db.ts';
import { Api, money, type BenchRequest, type Scenario } from './scenario.ts';

const USERS = 20;
const name = (i: number) => `payer${i}`;

interface SendBody {
  sender_username: string;
  target_username: string;
  amount: string;
}

const WALLETS_SQLITE = 'insert into credits_wallets (user_id, balance) values (?, 0), (?, 0) on conflict (user_id) do nothing';
const WALLETS_MYSQL = 'insert into credits_wallets (user_id, balance) values (?, 0), (?, 0) on duplicate key update balance = balance';
const LEDGER = `insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at)
  values (?, ?, ?, 'send', 'bench', null, ?, ?), (?, ?, ?, 'receive', 'bench', null, ?, ?)`;

/**
 * Moves `cents` from one wallet to another; undefined when the sender has too little. With `told`
 * (an endpoint subscribes to `credits.changed`), the transaction also writes the two events.
 */
async function transfer(db: BaseDb, from: number, to: number, cents: number, told: boolean): Promise<{ fromAfter: number; toAfter: number } | undefined> {
  const transferId = randomUUID();
  const ledger = (fromAfter: number, toAfter: number) => {
    const at = now();
    return [from, -cents, fromAfter, transferId, at, to, cents, toAfter, transferId, at];
  };
  const outbox = (fromAfter: number, toAfter: number) =>
    told
      ? BaseDb.outbox([
          { name: 'credits.changed', payload: { userId: from, delta: -cents, balance: fromAfter, reason: 'send', transferId } },
          { name: 'credits.changed', payload: { userId: to, delta: cents, balance: toAfter, reason: 'receive', transferId } },
        ])
      : undefined;
  if (db.sqlite) {
    const sqlite = db.sqlite;
    return sqlite.tx(() => {
      sqlite.run(WALLETS_SQLITE, from, to);
      const debited = sqlite.all(
        'update credits_wallets set balance = balance - ? where user_id = ? and balance >= ? returning balance',
        cents,
        from,
        cents,
      )[0];
      if (!debited) return undefined;
      const credited = sqlite.all('update credits_wallets set balance = balance + ? where user_id = ? returning balance', cents, to)[0]!;
      const after = { fromAfter: Number(debited.balance), toAfter: Number(credited.balance) };
      sqlite.run(LEDGER, ...ledger(after.fromAfter, after.toAfter));
      const events = outbox(after.fromAfter, after.toAfter);
      if (events) sqlite.run(events.sql, ...events.params);
      return after;
    });
  }
  return db
    .mysqlTx(async (conn) => {
      await conn.execute(WALLETS_MYSQL, [Math.min(from, to), Math.max(from, to)]);
      const after = new Map<number, number>();
      // Ascending ids, so two opposite transfers never wait on each other's second wallet.
      for (const [id, delta] of [
        [from, -cents],
        [to, cents],
      ].sort((a, b) => a[0]! - b[0]!) as [number, number][]) {
        const [res] = await conn.execute('update credits_wallets set balance = last_insert_id(balance + ?) where user_id = ? and balance + ? >= 0', [
          delta,
          id,
          delta,
        ]);
        const { affectedRows, insertId } = res as { affectedRows: number; insertId: number };
        if (affectedRows === 0) throw new NotEnough();
        after.set(id, Number(insertId));
      }
      const result = { fromAfter: after.get(from)!, toAfter: after.get(to)! };
      await conn.execute(LEDGER, ledger(result.fromAfter, result.toAfter));
      const events = outbox(result.fromAfter, result.toAfter);
      if (events) await conn.execute(events.sql, events.params);
      return result;
    })
    .catch((err: unknown) => {
      if (err instanceof NotEnough) return undefined;
      throw err;
    });
}

class NotEnough extends Error {}

const shown = (cents: number) => ({ text: `${money(cents)} USD`, raw: moneyNumber(cents) });

export const scenarios: Scenario[] = [
  {
    name: 'credits/send',
    async seed(api: Api) {
      await Api.batched(USERS, 10, (i) => api.player(2000 + i, name(i), 1_000_000_00));
      const requests: BenchRequest[] = [];
      for (let i = 0; i < USERS; i++) {
        for (const [sender, target] of [
          [i, (i + 1) % USERS],
          [(i + 1) % USERS, i],
        ]) {
          requests.push({
            method: 'POST',
            path: '/api/credits/send',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: `sender_username=${name(sender!)}&target_username=${name(target!)}&amount=0.01`,
          });
        }
      }
      return requests;
    },
    baseline: {
      method: 'POST',
      url: '/api/credits/send',
      async handler(db, request, reply) {
        const body = request.body as SendBody;
        const cents = parseMoney(body.amount)!;
        const users = await db.all('select id, username_key from users_accounts where username_key in (?, ?)', [
          body.sender_username.toLowerCase(),
          body.target_username.toLowerCase(),
        ]);
        const idOf = (username: string) => users.find((u) => String(u.username_key) === username.toLowerCase())?.id as number | undefined;
        const from = idOf(body.sender_username);
        const to = idOf(body.target_username);
        if (!from || !to) return reply.code(404).send({ status: false, error: 'USER_NOT_FOUND', message: 'No such user.' });
        const after = await transfer(db, from, to, cents, (await db.subscribed(['credits.changed'])).length > 0);
        if (!after) return reply.code(400).send({ status: false, error: 'NOT_ENOUGH_CREDITS', message: 'The balance is too low.' });
        const mine = shown(after.fromAfter);
        const theirs = shown(after.toAfter);
        return {
          status: true,
          current_credits: mine.text,
          current_raw_credits: mine.raw,
          target_current_credits: theirs.text,
          target_current_raw_credits: theirs.raw,
          currency: 'USD',
        };
      },
    },
  },
];
