/** Who listens for new work, by server: the SSE streams of this process. */
export class Wakeups {
  readonly #listeners = new Map<number, Set<() => void>>();

  listen(serverId: number, fn: () => void): () => void {
    let set = this.#listeners.get(serverId);
    if (!set) this.#listeners.set(serverId, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  wake(serverIds: Iterable<number>): void {
    for (const id of new Set(serverIds)) for (const fn of this.#listeners.get(id) ?? []) fn();
  }

  wakeAll(): void {
    this.wake(this.#listeners.keys());
  }

  /** Servers with a stream open in this process. */
  servers(): number[] {
    return [...this.#listeners].filter(([, set]) => set.size > 0).map(([id]) => id);
  }
}
