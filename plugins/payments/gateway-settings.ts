/**
 * Stripe's and PayPal's credentials set in the console (issue 49): kept beside the site settings
 * (every instance reads a change within their refresh, no restart) with the secrets sealed by the
 * auth feature's key, never shown back whole. An environment variable wins over a stored value,
 * and so does an apiBase in the configuration file that is not the default; the console shows
 * those read-only. The gateway itself is made again from the credentials in use when they change.
 */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { SecretSealer } from '../auth/contract.ts';

export type GatewayName = 'stripe' | 'paypal';
export type CredentialSource = 'config' | 'environment' | 'console';

interface FieldSpec {
  name: string;
  label: string;
  secret: boolean;
  /** The environment variable that wins over a stored value. */
  env?: string;
}

export const GATEWAY_FIELDS: Record<GatewayName, FieldSpec[]> = {
  stripe: [
    { name: 'secretKey', label: 'Secret key', secret: true, env: 'STRIPE_SECRET_KEY' },
    { name: 'webhookSecret', label: 'Webhook signing secret', secret: true, env: 'STRIPE_WEBHOOK_SECRET' },
    { name: 'apiBase', label: 'API address', secret: false },
  ],
  paypal: [
    { name: 'clientId', label: 'Client ID', secret: true, env: 'PAYPAL_CLIENT_ID' },
    { name: 'clientSecret', label: 'Client secret', secret: true, env: 'PAYPAL_CLIENT_SECRET' },
    { name: 'webhookId', label: 'Webhook ID', secret: false, env: 'PAYPAL_WEBHOOK_ID' },
    { name: 'apiBase', label: 'API address', secret: false },
  ],
};

export const DEFAULT_API_BASE: Record<GatewayName, string> = { stripe: 'https://api.stripe.com', paypal: 'https://api-m.paypal.com' };

/** A field as the console and the API show it: a secret only as whether it is set and its last 4 characters. */
export interface FieldView {
  value?: string;
  set: boolean;
  ending?: string;
  source: CredentialSource;
}

export class GatewaySettings {
  readonly #env: NodeJS.ProcessEnv;
  readonly #apiBase: Record<GatewayName, string>;
  readonly #settings: SettingsService;
  readonly #secrets: SecretSealer;
  readonly #db: Database;
  readonly #audit: AuditLog;

  constructor(peers: {
    env: NodeJS.ProcessEnv;
    apiBase: Record<GatewayName, string>;
    settings: SettingsService;
    secrets: SecretSealer;
    db: Database;
    audit: AuditLog;
  }) {
    this.#env = peers.env;
    this.#apiBase = peers.apiBase;
    this.#settings = peers.settings;
    this.#secrets = peers.secrets;
    this.#db = peers.db;
    this.#audit = peers.audit;
  }

  #stored(gateway: GatewayName): Record<string, string> {
    return (this.#settings.kept(`payments:${gateway}`) ?? {}) as Record<string, string>;
  }

  #source(gateway: GatewayName, spec: FieldSpec): CredentialSource {
    if (spec.env && this.#env[spec.env]) return 'environment';
    if (spec.name === 'apiBase' && this.#apiBase[gateway] !== DEFAULT_API_BASE[gateway]) return 'config';
    return 'console';
  }

  /** Every field's value in use, secrets in clear (for the gateway only); empty when unset. */
  current(gateway: GatewayName): Record<string, string> {
    const kept = this.#stored(gateway);
    const values: Record<string, string> = {};
    for (const spec of GATEWAY_FIELDS[gateway]) {
      const source = this.#source(gateway, spec);
      if (source === 'environment') values[spec.name] = this.#env[spec.env!]!;
      else if (source === 'config') values[spec.name] = this.#apiBase[gateway];
      else if (spec.name === 'apiBase') values[spec.name] = kept.apiBase || this.#apiBase[gateway];
      else if (!kept[spec.name]) values[spec.name] = '';
      else values[spec.name] = spec.secret ? this.#secrets.open(`payments:${gateway}.${spec.name}`, kept[spec.name]!) : kept[spec.name]!;
    }
    return values;
  }

  /** The fields still missing, by their names; empty when the gateway can be used. */
  missing(gateway: GatewayName): string[] {
    const kept = this.#stored(gateway);
    return GATEWAY_FIELDS[gateway]
      .filter((spec) => spec.name !== 'apiBase' && this.#source(gateway, spec) === 'console' && !kept[spec.name])
      .map((spec) => spec.env ?? spec.name);
  }

  view(gateway: GatewayName): Record<string, FieldView> {
    const values = this.current(gateway);
    return Object.fromEntries(
      GATEWAY_FIELDS[gateway].map((spec) => {
        const value = values[spec.name] ?? '';
        const source = this.#source(gateway, spec);
        if (!spec.secret) return [spec.name, { value, set: value !== '', source }];
        return [spec.name, { set: value !== '', ending: value.length > 8 ? value.slice(-4) : '', source }];
      }),
    );
  }

  /** Stores a change (an empty or absent field keeps its stored value), audited without the secrets. */
  async update(gateway: GatewayName, patch: Record<string, string | undefined>): Promise<Record<string, FieldView>> {
    const kept = { ...this.#stored(gateway) };
    const changed: string[] = [];
    for (const spec of GATEWAY_FIELDS[gateway]) {
      const value = patch[spec.name]?.trim();
      if (!value) continue;
      const source = this.#source(gateway, spec);
      if (source === 'environment') throw new DomainError('VALIDATION_ERROR', `${spec.name}: set by the environment variable ${spec.env}; change it there.`);
      if (source === 'config')
        throw new DomainError('VALIDATION_ERROR', `${spec.name}: set by the configuration file (plugins.payments.${gateway}ApiBase); change it there.`);
      if (spec.name === 'apiBase' && !/^https?:\/\/[^/?#\s]+\/?$/.test(value)) {
        throw new DomainError('VALIDATION_ERROR', 'apiBase: an http(s) address without a path, e.g. https://api.stripe.com.');
      }
      kept[spec.name] = spec.secret ? this.#secrets.seal(`payments:${gateway}.${spec.name}`, value) : value;
      changed.push(spec.name);
    }
    if (changed.length === 0) return this.view(gateway);
    const before = this.view(gateway);
    await this.#db.transaction(async () => {
      await this.#settings.keep(`payments:${gateway}`, kept);
      const shown = (view: Record<string, FieldView>) =>
        Object.fromEntries(
          changed.map((f) => [f, GATEWAY_FIELDS[gateway].find((s) => s.name === f)!.secret ? (view[f]!.set ? 'set' : 'unset') : view[f]!.value]),
        );
      await this.#audit.record({
        action: 'payments.gateway.update',
        target: { type: 'gateway', id: gateway },
        summary: `Changed the ${gateway} credentials: ${changed.join(', ')}`,
        before: shown(before),
        after: {
          ...shown(this.view(gateway)),
          ...Object.fromEntries(changed.filter((f) => !f.endsWith('Base') && this.#isSecret(gateway, f)).map((f) => [f, 'changed'])),
        },
      });
    });
    return this.view(gateway);
  }

  #isSecret(gateway: GatewayName, field: string): boolean {
    return GATEWAY_FIELDS[gateway].some((s) => s.name === field && s.secret);
  }
}
