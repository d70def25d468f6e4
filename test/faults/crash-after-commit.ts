/**
 * Loaded into a fault-suite server with `--import` (NODE_OPTIONS): the process SIGKILLs itself
 * right after the commit of a transaction that recorded an Idempotency-Key's answer, before the
 * answer is sent: the window a client sees as a timeout although its move happened.
 */
import { Database } from '../../core/db/database.ts';
import { IdempotencyStore } from '../../core/idempotency.ts';

let recorded = false;
const record = IdempotencyStore.prototype.record;
IdempotencyStore.prototype.record = async function (this: IdempotencyStore, ...args: Parameters<typeof record>) {
  const kept = await record.apply(this, args);
  recorded ||= kept;
  return kept;
};
const transaction = Database.prototype.transaction;
Database.prototype.transaction = async function <T>(this: Database, ...args: Parameters<typeof transaction<T>>): Promise<T> {
  const joins = this.inTransaction;
  const result = (await transaction.apply(this, args)) as T;
  if (!joins && recorded) process.kill(process.pid, 'SIGKILL');
  return result;
};
