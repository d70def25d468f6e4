/**
 * A big JSON answer put together from parts kept between reads, for a plainJson route whose clients
 * read the same long list again and again (sendJsonText): each item's JSON is kept in UTF-8 with the
 * value it was made from, and an item whose value is unchanged answers those bytes instead of being
 * serialized again. An answer made of the very parts of the last one, in the same order, is the last
 * answer's bytes again: a new big buffer on every read cost more in collection than the copy
 * (docs/performance.md, the listing's answer).
 */

/**
 * Whether every field of `a` but `except` holds the very same value in `b`: two reads of one shape
 * whose fields are strings, numbers or booleans. Hand-written for the hot path: util.isDeepStrictEqual
 * checks prototypes and both objects' keys, for every item of every answer.
 */
export function sameFields<T extends object>(a: T, b: T, except?: keyof T): boolean {
  for (const key in a) {
    if (key !== except && a[key] !== b[key]) return false;
  }
  return true;
}

/** Each item's JSON in the last answer, by key; an item not asked for in an answer is dropped at its end. */
export class KeptJson<K, V> {
  readonly #kept = new Map<K, { value: V; json: Buffer; seen: number }>();
  readonly #same: (a: V, b: V) => boolean;
  readonly #stringify: (value: V) => string;
  #round = 0;
  #count = 0;

  constructor(same: (a: V, b: V) => boolean, stringify: (value: V) => string) {
    this.#same = same;
    this.#stringify = stringify;
  }

  /** `value`'s JSON in UTF-8: the bytes kept for `key` when the value they were made from is the same. */
  json(key: K, value: V): Buffer {
    let kept = this.#kept.get(key);
    if (kept === undefined || !this.#same(value, kept.value)) {
      kept = { value, json: Buffer.from(this.#stringify(value)), seen: this.#round };
      this.#kept.set(key, kept);
    } else kept.seen = this.#round;
    this.#count++;
    return kept.json;
  }

  /** Ends an answer: what it did not ask for is dropped. */
  done(): void {
    if (this.#kept.size > this.#count) {
      for (const [key, kept] of this.#kept) if (kept.seen !== this.#round) this.#kept.delete(key);
    }
    this.#round++;
    this.#count = 0;
  }
}

const COMMA = Buffer.from(',');

/** One answer's parts, in order, with their length. */
export class JsonParts {
  readonly parts: Buffer[] = [];
  length = 0;

  put(part: Buffer): void {
    this.parts.push(part);
    this.length += part.length;
  }

  /** Each of `items`, put by `each`, with a comma between two. */
  list<T>(items: readonly T[], each: (item: T) => void): void {
    items.forEach((item, i) => {
      if (i > 0) this.put(COMMA);
      each(item);
    });
  }
}

/** A route's last answer and the parts it was made of. */
export class LastAnswer {
  #last: { parts: Buffer[]; bytes: Buffer } | undefined;

  /** `answer`'s parts in one copy, or the last answer's bytes when they were the very same parts in the same order. */
  bytes(answer: JsonParts): Buffer {
    const { parts, length } = answer;
    const last = this.#last;
    if (last?.parts.length === parts.length && last.parts.every((part, i) => part === parts[i])) return last.bytes;
    this.#last = { parts, bytes: Buffer.concat(parts, length) };
    return this.#last.bytes;
  }
}
