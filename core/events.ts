import type { FastifyBaseLogger } from 'fastify';
import type { TransactionScope } from './db.ts';
import { compareCodeUnits } from './format.ts';

/**
 * Domain events. Each feature adds its own events to this map from its contract.ts:
 *   declare module '../../core/events.ts' { interface EventMap { 'credits.changed': {...} } }
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty on purpose, each feature adds its events by declaration merging
export interface EventMap {}

export type EventName = keyof EventMap & string;
type Listener<K extends EventName> = (payload: EventMap[K]) => void | Promise<void>;

/** An event a feature declared (`events` in its definition), so listeners can offer it by name. */
export interface DeclaredEvent {
  name: string;
  /** One line saying when it is emitted, shown to owners choosing what to subscribe to. */
  description: string;
  feature: string;
}

/**
 * A small typed bus. Two kinds of listener:
 * - `on`: runs after the emitting transaction commits (or at once outside one), never blocks or
 *   fails the caller; its errors are logged. Use it for fan-out such as webhooks or caches.
 * - `onCommitting`: runs inside the emitting transaction and is awaited, so its writes commit or
 *   roll back with the cause. Use it only for durable hand-offs such as an outbox row.
 */
export class EventBus {
  #after = new Map<string, Listener<never>[]>();
  #inside = new Map<string, Listener<never>[]>();
  #declared = new Map<string, DeclaredEvent>();
  #log: FastifyBaseLogger;
  #scope: TransactionScope;

  constructor(log: FastifyBaseLogger, scope: TransactionScope) {
    this.#log = log;
    this.#scope = scope;
  }

  /** Called by the host for each enabled feature's `events` before any feature registers. */
  declare(event: DeclaredEvent): void {
    this.#declared.set(event.name, event);
  }

  /** Every declared event, by name: what a fan-out listener (webhooks) may subscribe to. */
  declared(): DeclaredEvent[] {
    return [...this.#declared.values()].sort((a, b) => compareCodeUnits(a.name, b.name));
  }

  on<K extends EventName>(name: K, listener: Listener<K>): void {
    push(this.#after, name, listener);
  }

  onCommitting<K extends EventName>(name: K, listener: Listener<K>): void {
    push(this.#inside, name, listener);
  }

  async emit<K extends EventName>(name: K, payload: EventMap[K]): Promise<void> {
    for (const listener of (this.#inside.get(name) ?? []) as Listener<K>[]) {
      // A listener with nothing to write returns nothing, and costs no turn of the microtask queue.
      const pending = listener(payload);
      if (pending) await pending;
    }
    const after = (this.#after.get(name) ?? []) as Listener<K>[];
    if (after.length === 0) return;
    const run = () => {
      for (const listener of after) {
        Promise.resolve()
          .then(() => listener(payload))
          .catch((err: unknown) => this.#log.error({ err, event: name }, 'event listener failed'));
      }
    };
    this.#scope.afterCommit(run);
  }
}

function push(map: Map<string, Listener<never>[]>, name: string, listener: Listener<never>) {
  const list = map.get(name) ?? [];
  list.push(listener);
  map.set(name, list);
}
