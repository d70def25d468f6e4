import { seeded } from '../random.ts';

/** The shared seeded generator with the helpers the fuzzer needs: the same seed gives the same requests. */
export class Random {
  readonly next: () => number;

  constructor(seed: number) {
    /** A float in [0, 1). */
    this.next = seeded(seed);
  }

  /** A generator of its own for one part of the run (a round, a route), so that adding a route
   * does not reshuffle the requests every other route gets. */
  static for(...parts: (string | number)[]): Random {
    let hash = 0x811c9dc5; // FNV-1a
    for (const ch of parts.join('\u0000')) hash = Math.imul(hash ^ ch.codePointAt(0)!, 0x01000193);
    return new Random(hash);
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** Up to `n` distinct items, in random order. */
  sample<T>(items: readonly T[], n: number): T[] {
    const copy = [...items];
    for (let i = 0; i < Math.min(n, copy.length); i++) {
      const j = i + this.int(copy.length - i);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, n);
  }
}
