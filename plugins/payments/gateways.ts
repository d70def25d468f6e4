/** The gateway adapters registry: the gateways registered, and the built-in ones left out for want of secrets. */
import type { FastifyBaseLogger } from 'fastify';
import type { SettingsService } from '../../core/settings.ts';
import { DomainError } from '../../core/errors.ts';
import type { GatewayAdapter } from './contract.ts';

export class Gateways {
  readonly #log: FastifyBaseLogger;
  readonly #adapters = new Map<string, GatewayAdapter>();
  /** Built-in gateways left out for want of secrets, with the reason the checkout error names. */
  readonly #disabled = new Map<string, string>();
  readonly #settings: SettingsService;

  constructor(log: FastifyBaseLogger, settings: SettingsService) {
    this.#log = log;
    this.#settings = settings;
  }

  /** Why a registered gateway is off now: a test gateway while the site's test mode is off, or credentials unset. */
  #off(adapter: GatewayAdapter): string | undefined {
    if (adapter.test && !this.#settings.get().testMode) return 'test mode is off (Site settings)';
    return adapter.offReason?.();
  }

  register(adapter: GatewayAdapter): void {
    if (!/^[a-z0-9-]{1,32}$/.test(adapter.name)) throw new Error(`Payment gateway name "${adapter.name}" must match [a-z0-9-]{1,32}.`);
    if (this.#adapters.has(adapter.name)) throw new Error(`Payment gateway "${adapter.name}" is registered twice.`);
    this.#adapters.set(adapter.name, adapter);
  }

  disable(name: string, reason: string): void {
    this.#disabled.set(name, reason);
    this.#log.info({ gateway: name }, `payment gateway ${name} disabled: ${reason}`);
  }

  /** Every gateway known: the registered ones, and the built-in ones left out with the reason. */
  all(): { name: string; reason?: string }[] {
    return [
      ...[...this.#adapters.values()].map((a) => ({ name: a.name, reason: this.#off(a) })),
      ...[...this.#disabled].map(([name, reason]) => ({ name, reason })),
    ];
  }

  available(): string[] {
    return [...this.#adapters.values()].filter((a) => !this.#off(a)).map((a) => a.name);
  }

  /** The gateways that move no money (test mode's), on or off. */
  testNames(): string[] {
    return [...this.#adapters.values()].filter((a) => a.test).map((a) => a.name);
  }

  /** The registered gateway of that name, if any. */
  find(name: string): GatewayAdapter | undefined {
    return this.#adapters.get(name);
  }

  /** GATEWAY_UNAVAILABLE, naming why, when there is no such gateway or it is disabled. */
  require(name: string): GatewayAdapter {
    const adapter = this.#adapters.get(name);
    const reason = adapter ? this.#off(adapter) : this.#disabled.get(name);
    if (adapter && !reason) return adapter;
    throw new DomainError('GATEWAY_UNAVAILABLE', reason ? `The gateway ${name} is disabled: ${reason}.` : `There is no payment gateway ${name}.`);
  }
}
