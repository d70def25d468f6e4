/**
 * The host's clock. Code that decides by time (leases, expiries, two-factor windows, rate-limit
 * windows, sweeps, retry delays) reads `clockNow()` instead of `Date.now()`, so a test can build an
 * app on a clock it moves forward instead of sleeping. There is one per process: instances built in
 * one test process share it, as machines share real time. Timers (`setTimeout`) stay real: a test
 * that moves the clock waits for the next sweep on an event or a condition.
 */

export interface Clock {
  /** Milliseconds since the Unix epoch, as `Date.now()`. */
  now(): number;
}

export const systemClock: Clock = { now: Date.now };

let current: Clock = systemClock;

/** The time in milliseconds, from the installed clock (the system's unless a test installed one). */
export function clockNow(): number {
  return current.now();
}

/** Installs a clock for this process; returns a function that puts the previous one back. */
export function installClock(clock: Clock): () => void {
  const previous = current;
  current = clock;
  return () => {
    if (current === clock) current = previous;
  };
}

/**
 * A clock for tests: real time plus an offset the test moves with `advance`, or, frozen, a fixed
 * instant that moves only by `advance` (two-factor codes computed for it stay valid however slow the
 * machine is).
 */
export class TestClock implements Clock {
  #offset = 0;
  readonly #frozenAt: number | undefined;

  constructor(options: { frozen?: boolean; at?: number } = {}) {
    this.#frozenAt = options.frozen ? (options.at ?? Date.now()) : undefined;
    if (!options.frozen && options.at !== undefined) this.#offset = options.at - Date.now();
  }

  now(): number {
    return (this.#frozenAt ?? Date.now()) + this.#offset;
  }

  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.#offset += ms;
  }
}
