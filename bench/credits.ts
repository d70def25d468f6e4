/**
 * `credits/send`: transfers among a ring of users, half of them in each direction, so requests
 * contend for the same wallets the way game servers paying each other's players do. The baseline
 * does the minimal locked transfer by hand: look both users up, lock both wallets in ascending id
 * order, check and update them, and write the two ledger rows, in one transaction.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { formatMoney, moneyNumber, now, parseMoney } from '../core/format.ts';
import { inTransaction, userWithCredits, type BenchRequest, type Scenario } from './scenario.ts';

const USERS = 20;
const name = (i: number) => `payer${i}`;

interface SendBody { sender_username: string; target_username: string; amount: string }

function sendBaseline(pool: Pool) {
  return {
    method: 'POST' as const,
    url: '/api/credits/send',
    async handler(request: FastifyRequest, reply: FastifyReply) {
      const body = request.body as SendBody;
      const cents = parseMoney(body.amount)!;
      const [users] = await pool.query<RowDataPacket[]>('select id, username_key from users_accounts where username_key in (?, ?)',
        [body.sender_username.toLowerCase(), body.target_username.toLowerCase()]);
      const idOf = (username: string) => users.find((u) => u.username_key === username.toLowerCase())!.id as number;
      const from = idOf(body.sender_username);
      const to = idOf(body.target_username);
      const after = await inTransaction(pool, async (conn) => {
        const balances = new Map<number, number>();
        for (const id of [from, to].sort((a, b) => a - b)) {
          const [[wallet]] = await conn.query<RowDataPacket[]>('select balance from credits_wallets where user_id = ? for update', [id]);
          balances.set(id, Number(wallet!.balance));
        }
        const fromAfter = balances.get(from)! - cents;
        const toAfter = balances.get(to)! + cents;
        // Refused before any write: committing the reads releases the locks as a rollback would.
        if (fromAfter < 0) return undefined;
        await conn.query('update credits_wallets set balance = ? where user_id = ?', [fromAfter, from]);
        await conn.query('update credits_wallets set balance = ? where user_id = ?', [toAfter, to]);
        const at = now();
        const transfer = randomUUID();
        await conn.query('insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at) values ?', [[
          [from, -cents, fromAfter, 'send', 'bench', null, transfer, at],
          [to, cents, toAfter, 'receive', 'bench', null, transfer, at],
        ]]);
        return { fromAfter, toAfter };
      });
      if (!after) return reply.code(400).send({ status: false, error: 'NOT_ENOUGH_CREDITS', message: 'The balance is too low.' });
      return {
        status: true, current_credits: `${formatMoney(after.fromAfter)} USD`, current_raw_credits: moneyNumber(after.fromAfter),
        target_current_credits: `${formatMoney(after.toAfter)} USD`, target_current_raw_credits: moneyNumber(after.toAfter), currency: 'USD',
      };
    },
  };
}

export const scenarios: Scenario[] = [{
  name: 'credits/send',
  features: ['users', 'credits'],
  async prepare(app) {
    for (let i = 0; i < USERS; i++) await userWithCredits(app, name(i), 1_000_000_00);
    // Each neighbour pair pays in both directions, so every wallet is locked from both sides.
    const requests: BenchRequest[] = [];
    for (let i = 0; i < USERS; i++) {
      for (const [sender, target] of [[i, (i + 1) % USERS], [(i + 1) % USERS, i]]) {
        requests.push({
          method: 'POST', path: '/api/credits/send', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sender_username: name(sender!), target_username: name(target!), amount: '0.01' }),
        });
      }
    }
    return requests;
  },
  baseline: sendBaseline,
}];
