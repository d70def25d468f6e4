/**
 * The service registry: the only way one feature reaches another.
 * A ref is a typed key; its id starts with the providing feature's name (`users`, `users.roles`),
 * which is how the host knows which feature a `requires: [ref]` entry points at.
 */
export interface ServiceRef<T> {
  readonly id: string;
  /** The feature that provides this service (the id up to the first dot). */
  readonly feature: string;
  /** Phantom field carrying the service type; never set at run time. */
  readonly type?: T;
}

export function createServiceRef<T>(id: string): ServiceRef<T> {
  return Object.freeze({ id, feature: id.split('.')[0]! });
}

export class ServiceRegistry {
  #services = new Map<string, unknown>();

  /** Makes a service available to every feature; a ref can be provided once. */
  provide<T>(ref: ServiceRef<T>, service: T): void {
    if (this.#services.has(ref.id)) throw new Error(`Service "${ref.id}" is provided twice.`);
    this.#services.set(ref.id, service);
  }

  /** A required peer: present because `requires` made the host load it first. */
  get<T>(ref: ServiceRef<T>): T {
    const service = this.#services.get(ref.id);
    if (service === undefined) {
      throw new Error(`Service "${ref.id}" is not provided: is the "${ref.feature}" feature enabled and listed in requires?`);
    }
    return service as T;
  }

  /** An optional peer: undefined when its feature is disabled. Look it up when used, not at registration. */
  find<T>(ref: ServiceRef<T>): T | undefined {
    return this.#services.get(ref.id) as T | undefined;
  }

  /** Swaps a service for another of the same ref (tests replace a peer with a mock). */
  replace<T>(ref: ServiceRef<T>, service: T): void {
    this.#services.set(ref.id, service);
  }
}
