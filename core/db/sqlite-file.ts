/**
 * What a connection to a SQLite file needs beside its statements: the write-ahead log's fsync on a
 * thread of its own, and the wait for another connection's write lock between turns of the loop.
 */
import { closeSync, openSync } from 'node:fs';
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

/** The fsync thread: an fdatasync of each descriptor it is sent, answered with null or the error. */
const SYNC_THREAD = `
const { parentPort } = require('node:worker_threads');
const { fdatasyncSync } = require('node:fs');
parentPort.on('message', (fd) => {
  try {
    fdatasyncSync(fd);
    parentPort.postMessage(null);
  } catch (err) {
    parentPort.postMessage({ code: err.code, message: err.message });
  }
});`;

/**
 * The write-ahead log's fsync (fdatasync, as SQLite's own) on a thread of its own, rather than
 * inside COMMIT on the event loop (the connection runs with synchronous = normal, which leaves it
 * to this), nor in libuv's pool, where a slow DNS lookup or a password hash would queue it.
 * Commits that ask while one runs share the next: it begins after all of their frames are
 * written. A commit is answered only once an fsync that began after it has returned, as
 * synchronous = full would answer it.
 */
export class WalSync {
  readonly #file: string;
  #fd?: number;
  #thread?: Worker;
  #answer?: (err?: Error) => void;
  #running?: Promise<void>;
  #next?: Promise<void>;

  /** `file`: the database's -wal file, which exists from the first commit in WAL mode. */
  constructor(file: string) {
    this.#file = file;
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

  /** One fdatasync of the log, on the thread. */
  flush(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#fd ??= openSync(this.#file, 'r');
      const thread = this.#thread ?? this.#startThread();
      this.#answer = (err) => {
        this.#answer = undefined;
        // Idle, the thread keeps no process alive; while it syncs, the process waits for it.
        thread.unref();
        if (err) reject(err);
        else resolve();
      };
      thread.ref();
      thread.postMessage(this.#fd);
    });
  }

  #startThread(): Worker {
    const thread = new Worker(SYNC_THREAD, { eval: true });
    thread.on('message', (failed: { code?: string; message: string } | null) =>
      this.#answer?.(failed ? Object.assign(new Error(failed.message), { code: failed.code }) : undefined),
    );
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
