/**
 * What a connection to a SQLite file needs beside its statements: the write-ahead log's fsync (on
 * the event loop while the disk answers quickly, else on a thread of its own), and the wait for
 * another connection's write lock between turns of the loop.
 */
import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { sqliteCode } from './errors.ts';

/** SQLite's "the file is locked by another connection" (SQLITE_BUSY, whatever its extended code). */
const SQLITE_BUSY = 5;
/** How long a statement waits for another connection's write lock on the file before it is refused. */
export const LOCK_WAIT_MS = 5000;
/** The longest pause between two tries for that lock. */
const MAX_LOCK_PAUSE_MS = 50;

/**
 * A wait for another connection's write lock, between turns of the event loop. The writing
 * connection runs with busy_timeout = 0: SQLite's own wait would hold the loop, and with it whatever
 * in this process holds the lock (a second instance on the file), which then cannot end it.
 */
export class LockWait {
  readonly #since = Date.now();
  #pause = 1;

  /** Resolves after a pause when `err` is the file's lock and the wait has time left; otherwise throws `err`. */
  async after(err: unknown): Promise<void> {
    if (sqliteCode(err) !== SQLITE_BUSY || Date.now() - this.#since >= LOCK_WAIT_MS) throw err;
    await new Promise((resolve) => setTimeout(resolve, this.#pause));
    this.#pause = Math.min(this.#pause * 2, MAX_LOCK_PAUSE_MS);
  }
}

/**
 * While the log's fsyncs take less than this on average (ms), they run on the event loop: holding the
 * loop that long costs it less than a trip to the thread and back, and the commit's answer no turns.
 */
export const INLINE_FSYNC_MS = 0.5;

/** The fsync thread: an fdatasync of each descriptor it is sent, answered with the ms it took or the error. */
const SYNC_THREAD = `
const { parentPort } = require('node:worker_threads');
const { fdatasyncSync } = require('node:fs');
parentPort.on('message', (fd) => {
  try {
    const start = performance.now();
    fdatasyncSync(fd);
    parentPort.postMessage(performance.now() - start);
  } catch (err) {
    parentPort.postMessage({ code: err.code, message: err.message });
  }
});`;

/**
 * The write-ahead log's fsync (fdatasync, as SQLite's own) after a commit (the connection runs with
 * synchronous = normal, which leaves it to this). A disk that answers within INLINE_FSYNC_MS on
 * average has it on the event loop, outside COMMIT; a slower one on a thread of its own, so the loop
 * serves meanwhile (not libuv's pool, where a slow DNS lookup or a password hash would queue it).
 * The average counts the fsyncs of both places, so the choice follows the disk either way.
 * Commits that ask while one runs share the next: it begins after all of their frames are
 * written. A commit is answered only once an fsync that began after it has returned, as
 * synchronous = full would answer it.
 */
export class WalSync {
  readonly #file: string;
  readonly #inlineMs: number;
  /** The fsyncs' recent average, ms (each new one weighs an eighth). */
  #averageMs = 0;
  #fd?: number;
  #thread?: Worker;
  #answer?: (err?: Error) => void;
  #running?: Promise<void>;
  #next?: Promise<void>;

  /**
   * `file`: the database's -wal file, which exists from the first commit in WAL mode; `inlineMs`:
   * the average under which the fsyncs run on the event loop.
   */
  constructor(file: string, inlineMs = INLINE_FSYNC_MS) {
    this.#file = file;
    this.#inlineMs = inlineMs;
  }

  /** Where the next fsync runs. */
  get place(): 'loop' | 'thread' {
    return this.#averageMs < this.#inlineMs ? 'loop' : 'thread';
  }

  /** The fsyncs' recent average, ms (0 before the first). */
  get averageMs(): number {
    return this.#averageMs;
  }

  /** Resolves once the frames of every commit made so far are on the disk. */
  synced(): Promise<void> {
    if (!this.#running) return this.#start();
    // The running fsync may have begun before this commit's frames were written: the next one covers them.
    this.#next ??= this.#running.then(
      () => this.#start(),
      () => this.#start(),
    );
    return this.#next;
  }

  #start(): Promise<void> {
    this.#next = undefined;
    const running = this.flush().finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }

  /** One fdatasync of the log, on the event loop or the thread (`place`). */
  flush(): Promise<void> {
    // A failure is the promise's, never thrown: a batch's commit asks for this from the event loop.
    try {
      this.#fd ??= openSync(this.#file, 'r');
      if (this.place === 'loop') {
        const start = performance.now();
        fdatasyncSync(this.#fd);
        this.#took(performance.now() - start);
        return Promise.resolve();
      }
    } catch (err) {
      return Promise.reject(err);
    }
    const fd = this.#fd;
    return new Promise((resolve, reject) => {
      const thread = this.#thread ?? this.#startThread();
      this.#answer = (err) => {
        this.#answer = undefined;
        // Idle, the thread keeps no process alive; while it syncs, the process waits for it.
        thread.unref();
        if (err) reject(err);
        else resolve();
      };
      thread.ref();
      thread.postMessage(fd);
    });
  }

  #took(ms: number): void {
    this.#averageMs += (ms - this.#averageMs) / 8;
  }

  #startThread(): Worker {
    const thread = new Worker(SYNC_THREAD, { eval: true });
    thread.on('message', (answer: number | { code?: string; message: string }) => {
      if (typeof answer === 'number') {
        this.#took(answer);
        this.#answer?.();
      } else this.#answer?.(Object.assign(new Error(answer.message), { code: answer.code }));
    });
    const lost = (err: Error) => {
      if (this.#thread === thread) this.#thread = undefined;
      this.#answer?.(err);
    };
    thread.on('error', lost);
    thread.on('exit', () => lost(new Error('the fsync thread stopped')));
    this.#thread = thread;
    return thread;
  }

  /** Waits for the fsyncs asked for, then lets the thread and the file go. */
  async close(): Promise<void> {
    await Promise.allSettled([this.#running, this.#next]);
    const thread = this.#thread;
    this.#thread = undefined;
    await thread?.terminate();
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

/** What a connection to a file has beside its own: the read-only connection, and the log's fsync. */
export interface OnFile {
  reader: DatabaseSync;
  wal: WalSync;
}
