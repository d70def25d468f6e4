/** Staff sessions: a random token in an HttpOnly cookie, its hash in console_sessions, a CSRF token per session. */
import { hash as digest } from 'node:crypto';
import type { Database } from '../../core/db.ts';
import { addSeconds, now } from '../../core/format.ts';
import { newToken } from '../../core/pages.ts';
import { sql } from '../../core/sql.ts';
import { ConsoleSession } from './entities.ts';

export interface StaffSession {
  id: number;
  userId: number;
  csrfToken: string;
}

const hash = (token: string) => digest('sha256', token, 'hex');
const S = ConsoleSession.c;

/** A session's last-seen time is written at most this often: reading a page costs no write. */
const TOUCH_SECONDS = 30;

export class ConsoleSessions {
  readonly #db: Database;
  readonly #idleSeconds: number;

  constructor(db: Database, idleMinutes: number) {
    this.#db = db;
    this.#idleSeconds = idleMinutes * 60;
  }

  async open(userId: number, ip: string): Promise<{ token: string; session: StaffSession }> {
    const token = newToken();
    const csrfToken = newToken();
    const at = now();
    const id = await ConsoleSession.insert(this.#db, { tokenHash: hash(token), userId, csrfToken, ip: ip.slice(0, 45), createdAt: at, lastSeenAt: at });
    return { token, session: { id, userId, csrfToken } };
  }

  /** The live session of a token; one idle too long is ended here. */
  async find(token: string): Promise<StaffSession | undefined> {
    if (!/^[0-9a-f]{64}$/.test(token)) return undefined;
    const at = now();
    const [row] = await ConsoleSession.select(this.#db, sql`where ${S.tokenHash} = ${hash(token)}`);
    if (!row) return undefined;
    if (row.lastSeenAt <= addSeconds(at, -this.#idleSeconds)) {
      await this.close(row.id);
      return undefined;
    }
    if (row.lastSeenAt <= addSeconds(at, -TOUCH_SECONDS)) await ConsoleSession.update(this.#db, row.id, { lastSeenAt: at });
    return { id: row.id, userId: row.userId, csrfToken: row.csrfToken };
  }

  async close(sessionId: number): Promise<void> {
    await this.#db.run(sql`delete from ${ConsoleSession} where ${S.id} = ${sessionId}`);
  }

  /** Deletes sessions idle past the timeout; returns how many went. */
  async sweep(): Promise<number> {
    const { affectedRows } = await this.#db.run(sql`delete from ${ConsoleSession} where ${S.lastSeenAt} <= ${addSeconds(now(), -this.#idleSeconds)}`);
    return affectedRows;
  }
}
