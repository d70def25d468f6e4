/**
 * The SMTP server in use: the configuration file's when it names a host (then it wins, field by
 * field read-only in the console), otherwise what staff set in the console, kept beside the site
 * settings (so every instance reads the change within their refresh) with the password sealed by
 * the auth feature's key. The password's environment variable wins over a stored one.
 */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { SecretSealer } from '../auth/contract.ts';
import { Mailer, type Mail, type SmtpOptions } from './mailer.ts';

export interface SmtpConfig {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  passwordEnv: string;
  from: string;
  timeoutMs: number;
}

/** Where a field's value comes from: the console shows the first two read-only. */
export type SmtpSource = 'config' | 'environment' | 'console';

export const SMTP_FIELDS = ['host', 'port', 'secure', 'user', 'from'] as const;
type Field = (typeof SMTP_FIELDS)[number];

export interface SmtpView {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  from: string;
  /** A password is set; only its last 4 characters are ever shown, and only when it is longer than 8. */
  passwordSet: boolean;
  passwordEnding: string;
  sources: Record<Field | 'password', SmtpSource>;
}

export interface SmtpPatch {
  host?: string;
  port?: number;
  secure?: boolean;
  user?: string;
  from?: string;
  /** Empty or absent: the stored password stays. */
  password?: string;
}

const KEY = 'email:smtp';
const PASSWORD_CONTEXT = 'email:smtp.password';

export class SmtpSettings {
  readonly #config: SmtpConfig;
  readonly #env: NodeJS.ProcessEnv;
  readonly #settings: SettingsService;
  readonly #secrets: SecretSealer;
  readonly #db: Database;
  readonly #audit: AuditLog;
  #mailer?: { key: string; mailer: Mailer };

  constructor(config: SmtpConfig, peers: { env: NodeJS.ProcessEnv; settings: SettingsService; secrets: SecretSealer; db: Database; audit: AuditLog }) {
    this.#config = config;
    this.#env = peers.env;
    this.#settings = peers.settings;
    this.#secrets = peers.secrets;
    this.#db = peers.db;
    this.#audit = peers.audit;
  }

  /** The configuration file names a server: its fields win and the console cannot change them. */
  get fromConfig(): boolean {
    return this.#config.host !== '';
  }

  #envPassword(): string | undefined {
    return this.#env[this.#config.passwordEnv] || undefined;
  }

  #stored(): Partial<Record<Field, unknown>> & { password?: string } {
    return (this.#settings.kept(KEY) ?? {}) as Partial<Record<Field, unknown>> & { password?: string };
  }

  /** The server and sender in use, without the password. */
  #base(): Omit<SmtpOptions, 'timeoutMs'> {
    const kept = this.#stored();
    return this.fromConfig
      ? this.#config
      : {
          host: String(kept.host ?? ''),
          port: Number(kept.port ?? this.#config.port),
          secure: Boolean(kept.secure ?? this.#config.secure),
          user: String(kept.user ?? ''),
          from: String(kept.from ?? ''),
        };
  }

  /** The server and sender in use, with the password in clear (for the transport only). */
  current(): SmtpOptions & { password?: string } {
    const { host, port, secure, user, from } = this.#base();
    const kept = this.#stored().password;
    const password = this.#envPassword() ?? (kept ? this.#secrets.open(PASSWORD_CONTEXT, kept) : undefined);
    return { host, port, secure, user, from, timeoutMs: this.#config.timeoutMs, password };
  }

  /** Mail can be sent: a server and a sender are set. */
  configured(): boolean {
    const { host, from } = this.#base();
    return host !== '' && from !== '';
  }

  /** The transport for the settings in use, made again when they changed (here or on another instance). */
  mailer(): Mailer {
    const options = this.current();
    if (!options.host || !options.from) throw new Error('SMTP is not set up any more: set it in the console or the configuration file.');
    const key = JSON.stringify(options);
    if (this.#mailer?.key !== key) {
      this.#mailer?.mailer.close();
      this.#mailer = { key, mailer: new Mailer(options, options.password) };
    }
    return this.#mailer.mailer;
  }

  /** Sends one message now, outside the outbox: the console's test, whose answer says whether the server took it. */
  async sendNow(mail: Mail): Promise<void> {
    if (!this.configured()) throw new DomainError('SERVICE_UNAVAILABLE', 'SMTP is not set up: set a server and a sender first.');
    try {
      await this.mailer().send(mail);
    } catch (err) {
      throw new DomainError('SMTP_ERROR', `The SMTP server did not take the message: ${(err as Error).message}`);
    }
  }

  view(): SmtpView {
    const { password, ...rest } = this.current();
    const source: SmtpSource = this.fromConfig ? 'config' : 'console';
    return {
      host: rest.host,
      port: rest.port,
      secure: rest.secure,
      user: rest.user,
      from: rest.from,
      passwordSet: Boolean(password),
      passwordEnding: password && password.length > 8 ? password.slice(-4) : '',
      sources: {
        host: source,
        port: source,
        secure: source,
        user: source,
        from: source,
        password: this.#envPassword() ? 'environment' : 'console',
      },
    };
  }

  /** Stores a change made in the console or the admin API, audited without the password. */
  async update(patch: SmtpPatch): Promise<SmtpView> {
    const view = this.view();
    for (const field of [...SMTP_FIELDS, 'password'] as const) {
      if (patch[field] === undefined || (field === 'password' && patch.password === '')) continue;
      const where = view.sources[field];
      if (where === 'config')
        throw new DomainError('VALIDATION_ERROR', `${field}: set by the configuration file (plugins.email.smtp.${field}); change it there.`);
      if (where === 'environment')
        throw new DomainError('VALIDATION_ERROR', `password: set by the environment variable ${this.#config.passwordEnv}; change it there.`);
    }
    const kept = this.#stored();
    const next: Record<string, unknown> = {
      host: (patch.host ?? view.host).trim(),
      port: patch.port ?? view.port,
      secure: patch.secure ?? view.secure,
      user: (patch.user ?? view.user).trim(),
      from: (patch.from ?? view.from).trim(),
    };
    if (next.host !== '' && next.from === '') throw new DomainError('VALIDATION_ERROR', 'from: the sender address is required with a server.');
    const passwordChanged = Boolean(patch.password);
    if (patch.password) next.password = this.#secrets.seal(PASSWORD_CONTEXT, patch.password);
    else if (kept.password) next.password = kept.password;
    const changed = SMTP_FIELDS.filter((f) => next[f] !== view[f]);
    if (changed.length === 0 && !passwordChanged) return view;
    await this.#db.transaction(async () => {
      await this.#settings.keep(KEY, next);
      await this.#audit.record({
        action: 'email.smtp.update',
        target: { type: 'settings', id: 'email.smtp' },
        summary: `Changed the SMTP settings: ${[...changed, ...(passwordChanged ? ['password'] : [])].join(', ')}`,
        before: Object.fromEntries(changed.map((f) => [f, view[f]])),
        after: { ...Object.fromEntries(changed.map((f) => [f, next[f]])), ...(passwordChanged ? { password: 'changed' } : {}) },
      });
    });
    return this.view();
  }

  close(): void {
    this.#mailer?.mailer.close();
  }
}
