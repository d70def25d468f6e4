/**
 * The outbox worker: sends what is due, one message at a time, from every server process at
 * once. A message is claimed by a conditional update that moves its due time past a lease, so two
 * processes never send it together, and one killed mid-send leaves it to be sent again when the
 * lease runs out: a message may arrive twice, never not at all. A failed send is retried with a
 * doubling delay, up to maxAttempts; a permanent refusal (5xx) gives up at once.
 */
import { countParam, type Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import { EmailOutbox } from './entities.ts';
import { permanent, type Mail } from './mailer.ts';
import type { MailKind } from './templates.ts';

export type OutboxRow = TableRecord<typeof EmailOutbox>;

export interface OutboxOptions {
  retryBaseMs: number;
  retryMaxMs: number;
  maxAttempts: number;
  /** How long a claimed message stays another process's: longer than a send may take. */
  leaseMs: number;
}

export interface NewMessage {
  kind: MailKind;
  userId: number | null;
  recipient: string;
  lang: string;
  params: Record<string, unknown>;
}

const O = EmailOutbox.c;
const BATCH = 20;
const ERROR_MAX = 255;

export class Outbox {
  readonly #db: Database;
  readonly #opts: OutboxOptions;
  readonly #compose: (row: OutboxRow) => Promise<Mail>;
  readonly #send: (mail: Mail) => Promise<void>;
  #running?: Promise<void>;
  #again = false;
  #stopping = false;

  constructor(db: Database, opts: OutboxOptions, compose: (row: OutboxRow) => Promise<Mail>, send: (mail: Mail) => Promise<void>) {
    this.#db = db;
    this.#opts = opts;
    this.#compose = compose;
    this.#send = send;
  }

  /** Queues a message; inside a transaction it commits or rolls back with it, and is sent once that commits. */
  async add(message: NewMessage): Promise<number> {
    const id = await EmailOutbox.insert(this.#db, {
      ...message,
      params: JSON.stringify(message.params),
      subject: null,
      state: 'queued',
      attempts: 0,
      dueAt: Date.now(),
      lastError: null,
      createdAt: now(),
      sentAt: null,
    });
    // A failing pass is logged by the next round of the poll.
    this.#db.afterCommit(() => {
      this.kick().catch(() => undefined);
    });
    return id;
  }

  /** Queues a copy of a message (the console's "send again"); the copy has its own attempts. Undefined when there is no such message. */
  async again(id: number): Promise<number | undefined> {
    const [row] = await EmailOutbox.select(this.#db, sql`where ${O.id} = ${id}`);
    if (!row) return undefined;
    const { kind, userId, recipient, lang, params } = row;
    return this.add({ kind: kind as MailKind, userId, recipient, lang, params: JSON.parse(params) as Record<string, unknown> });
  }

  /** The latest messages, newest first. */
  async recent(limit: number): Promise<OutboxRow[]> {
    return EmailOutbox.select(this.#db, sql`order by ${O.id} desc limit ${countParam(limit)}`);
  }

  /** Sends everything due now; a call while a pass runs makes that pass look once more. */
  kick(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#pass();
      } while (this.#again && !this.#stopping);
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Lets the message being sent finish; nothing new starts. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#running?.catch(() => undefined);
  }

  async #pass(): Promise<void> {
    while (!this.#stopping) {
      const rows = await EmailOutbox.select(
        this.#db,
        sql`where ${O.state} = ${'queued'} and ${O.dueAt} <= ${Date.now()} order by ${O.dueAt}, ${O.id} limit ${countParam(BATCH)}`,
      );
      if (rows.length === 0) return;
      for (const row of rows) {
        if (this.#stopping) return;
        await this.#deliver(row);
      }
    }
  }

  async #deliver(row: OutboxRow): Promise<void> {
    const at = Date.now();
    const claimed = await this.#db.run(sql`update ${EmailOutbox} set ${O.dueAt} = ${at + this.#opts.leaseMs}, ${O.attempts} = ${O.attempts} + 1
      where ${O.id} = ${row.id} and ${O.state} = ${'queued'} and ${O.dueAt} <= ${at}`);
    if (claimed.affectedRows === 0) return; // another process has it
    const attempts = row.attempts + 1;
    let subject: string | null = null;
    try {
      const mail = await this.#compose(row);
      subject = mail.subject.slice(0, 255);
      await this.#send(mail);
    } catch (err) {
      const error = String((err as Error).message ?? err).slice(0, ERROR_MAX);
      const giveUp = permanent(err) || attempts >= this.#opts.maxAttempts;
      const delay = Math.min(this.#opts.retryBaseMs * 2 ** (attempts - 1), this.#opts.retryMaxMs);
      await EmailOutbox.update(this.#db, row.id, { ...(giveUp ? { state: 'failed' } : { dueAt: Date.now() + delay }), lastError: error, subject });
      return;
    }
    await EmailOutbox.update(this.#db, row.id, { state: 'sent', sentAt: now(), subject });
  }
}
