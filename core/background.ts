/**
 * Work a feature repeats in the background: sweeps, queues. A database that cannot serve (a full
 * disk, a read-only file, an outage) fails every round the same way until someone acts, so that
 * is logged once, in a sentence, and again when a round succeeds; any other failure is a fault in
 * the round itself and is logged each time, with its stack.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { isDatabaseUnavailable, lastingWriteFault } from './db/errors.ts';

export class RoundLog {
  readonly #log: FastifyBaseLogger;
  readonly #what: string;
  /** Set while rounds fail because the database cannot serve. */
  #paused = false;

  /** `what` names the work in the log: "delivery lease sweep". */
  constructor(log: FastifyBaseLogger, what: string) {
    this.#log = log;
    this.#what = what;
  }

  failed(err: unknown): void {
    if (!isDatabaseUnavailable(err)) {
      this.#log.error({ err }, `${this.#what} failed`);
      return;
    }
    if (this.#paused) return;
    this.#paused = true;
    const why = lastingWriteFault(err) ?? `The database cannot serve (${(err as Error).message}).`;
    this.#log.error(`${this.#what} paused: ${why} It resumes by itself once the database serves again.`);
  }

  succeeded(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#log.info(`${this.#what} resumed: the database serves again.`);
  }
}

/**
 * Runs `round` every `ms` from when the server is ready until it closes, one round at a time
 * (a round slowed by the database is not joined by the next), logging through a RoundLog.
 */
export function everyRound(app: FastifyInstance, log: FastifyBaseLogger, what: string, ms: number, round: () => Promise<unknown>): void {
  const rounds = new RoundLog(log, what);
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  app.addHook('onReady', async () => {
    timer = setInterval(() => {
      if (running) return;
      running = true;
      round()
        .then(
          () => rounds.succeeded(),
          (err: unknown) => rounds.failed(err),
        )
        .finally(() => {
          running = false;
        });
    }, ms);
    timer.unref();
  });
  app.addHook('preClose', async () => clearInterval(timer));
}
