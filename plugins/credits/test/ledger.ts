/** Test helper: what is wrong with the credits tables, as sentences (none when the books balance). */
import type { FastifyInstance } from 'fastify';
import { fields, sql } from '../../../core/sql.ts';
import { CreditsLedgerEntry, CreditsWallet } from '../entities.ts';

export async function ledgerProblems(app: FastifyInstance): Promise<string[]> {
  const problems: string[] = [];
  const W = CreditsWallet.c;
  const L = CreditsLedgerEntry.c;
  const wallets = await app.db.query(sql`select ${fields({ user_id: W.userId, balance: W.balance })} from ${CreditsWallet}`);
  const rows = await app.db.query(
    sql`select ${fields({ id: L.id, user_id: L.userId, delta: L.delta, balance: L.balance })} from ${CreditsLedgerEntry} order by ${L.id}`,
  );
  const running = new Map<number, number>();
  for (const r of rows) {
    const after = (running.get(Number(r.user_id)) ?? 0) + Number(r.delta);
    if (Number(r.balance) !== after) problems.push(`ledger row ${r.id} says ${r.balance}, its user's running sum is ${after}`);
    if (after < 0) problems.push(`ledger row ${r.id} leaves user ${r.user_id} at ${after}`);
    running.set(Number(r.user_id), after);
  }
  for (const w of wallets) {
    const sum = running.get(Number(w.user_id)) ?? 0;
    if (Number(w.balance) !== sum) problems.push(`wallet of user ${w.user_id} holds ${w.balance}, its ledger sums to ${sum}`);
    if (Number(w.balance) < 0) problems.push(`wallet of user ${w.user_id} is negative`);
  }
  return problems;
}
