/** Staff sessions: a random token in an HttpOnly cookie, its hash in console_sessions, a CSRF token per session. */
import { createHash } from 'node:crypto';
import type { Database } from '../../core/db.ts';
import { addSeconds, now } from '../../core/format.ts';
import { newToken } from '../../core/pages.ts';

export interface StaffSession {
  id: number;
  userId: number;
  csrfToken: string;
}

const hash = (token: string) => createHash('sha256').update(token).digest('hex');

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
    const { insertId } = await this.#db.run(
      'insert into console_sessions (token_hash, user_id, csrf_token, ip, created_at, last_seen_at) values (?, ?, ?, ?, ?, ?)',
      [hash(token), userId, csrfToken, ip.slice(0, 45), at, at]);
    return { token, session: { id: insertId, userId, csrfToken } };
  }

  /** The live session of a token; one idle too long is ended here. */
  async find(token: string): Promise<StaffSession | undefined> {
    if (!/^[0-9a-f]{64}$/.test(token)) return undefined;
    const at = now();
    const [row] = await this.#db.query<{ id: number; user_id: number; csrf_token: string; last_seen_at: string }>(
      'select id, user_id, csrf_token, last_seen_at from console_sessions where token_hash = ?', [hash(token)]);
    if (!row) return undefined;
    if (row.last_seen_at <= addSeconds(at, -this.#idleSeconds)) {
      await this.#db.run('delete from console_sessions where id = ?', [row.id]);
      return undefined;
    }
    if (row.last_seen_at <= addSeconds(at, -TOUCH_SECONDS)) {
      await this.#db.run('update console_sessions set last_seen_at = ? where id = ?', [at, row.id]);
    }
    return { id: Number(row.id), userId: Number(row.user_id), csrfToken: row.csrf_token };
  }

  async close(sessionId: number): Promise<void> {
    await this.#db.run('delete from console_sessions where id = ?', [sessionId]);
  }

  /** Deletes sessions idle past the timeout; returns how many went. */
  async sweep(): Promise<number> {
    const { affectedRows } = await this.#db.run('delete from console_sessions where last_seen_at <= ?', [addSeconds(now(), -this.#idleSeconds)]);
    return affectedRows;
  }
}
