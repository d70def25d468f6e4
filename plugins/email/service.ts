/**
 * What the mails say and to whom: receipts and ticket answers queued from the features' events,
 * password reset and email verification links with their single-use tokens (only hashes stored,
 * each token made when its mail is sent, so none waits in the outbox in clear).
 */
import { hash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { addSeconds, displayTimestamp, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { sql } from '../../core/sql.ts';
import type { AuthService } from '../auth/contract.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { StorefrontService } from '../storefront/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import type { EmailService, MailLanguage, SubscriptionMail, SubscriptionMailKind } from './contract.ts';
import { EmailToken } from './entities.ts';
import type { Mail } from './mailer.ts';
import type { NewMessage, Outbox, OutboxRow } from './outbox.ts';
import type { SmtpSettings } from './smtp-settings.ts';
import { mailLanguage, type MailKind, Templates } from './templates.ts';

export interface EmailOptions {
  /** SMTP is set now (in the configuration file or the console). */
  configured: () => boolean;
  requireVerification: boolean;
  resetMinutes: number;
  verifyHours: number;
  guestOrderDays: number;
  /** A folder of mail templates replacing the shipped ones of the same name. */
  themeDir: string;
}

export interface EmailPeers {
  db: Database;
  audit: AuditLog;
  users: UsersService;
  auth: AuthService;
  settings: SettingsService;
  /** Found when a mail is written: the storefront's page addresses for its links. */
  storefront: () => StorefrontService | undefined;
  /** Found when a receipt is written: the tax its order carries. */
  payments: () => PaymentsService | undefined;
}

type TokenPurpose = 'reset-password' | 'verify-email' | 'guest-order';

const T = EmailToken.c;
const hashOf = (token: string) => hash('sha256', token, 'hex');
const TOKEN = /^[0-9a-f]{64}$/;

export class DbEmailService implements EmailService {
  readonly #peers: EmailPeers;
  readonly #opts: EmailOptions;
  readonly #templates: Templates;
  readonly outbox: Outbox;
  /** The SMTP server in use (the configuration file's or the console's). */
  smtp!: SmtpSettings;
  readonly countMailLink: (request: FastifyRequest, login: string) => Promise<void>;

  constructor(peers: EmailPeers, opts: EmailOptions, outbox: Outbox, countMailLink: (request: FastifyRequest, login: string) => Promise<void>) {
    this.#peers = peers;
    this.#opts = opts;
    this.#templates = new Templates(opts.themeDir);
    this.outbox = outbox;
    this.countMailLink = countMailLink;
  }

  get configured(): boolean {
    return this.#opts.configured();
  }

  get verificationRequired(): boolean {
    return this.#opts.configured() && this.#opts.requireVerification;
  }

  /** The language of mails no visitor asked for (receipts, answers): the storefront's default. */
  siteLanguage(): MailLanguage {
    return mailLanguage(String((this.#peers.settings.get() as { storefrontLanguage?: string }).storefrontLanguage ?? 'en'));
  }

  /** Queues a mail to an account, when SMTP is set and the account has an email. */
  async queueFor(kind: MailKind, userId: number, params: Record<string, unknown>, lang?: MailLanguage): Promise<void> {
    if (!this.#opts.configured() || userId <= 0) return;
    const user = await this.#peers.users.findById(userId);
    if (!user?.email) return;
    await this.outbox.add(this.#message(kind, user, params, lang));
  }

  queueSubscriptionMail(kind: SubscriptionMailKind, userId: number, mail: SubscriptionMail): Promise<void> {
    return this.queueFor(kind, userId, { ...mail });
  }

  /** A guest's receipt, to the email typed at checkout (none typed: no mail); its link is made when it is sent. */
  async queueGuestReceipt(email: string | null, guestName: string, params: Record<string, unknown>): Promise<void> {
    if (!this.#opts.configured() || !email) return;
    await this.outbox.add({
      kind: 'order-receipt',
      userId: null,
      recipient: email,
      lang: this.siteLanguage(),
      params: { ...params, name: guestName, guest: true },
    });
  }

  async guestOrder(token: string): Promise<number | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const [row] = await EmailToken.select(
      this.#peers.db,
      sql`where ${T.tokenHash} = ${hashOf(token)} and ${T.purpose} = ${'guest-order'} and ${T.expiresAt} > ${now()}`,
    );
    return row?.userId;
  }

  #message(kind: MailKind, user: UserAccount, params: Record<string, unknown>, lang?: MailLanguage): NewMessage {
    return { kind, userId: user.id, recipient: user.email!, lang: lang ?? this.siteLanguage(), params: { ...params, name: user.username } };
  }

  /** A test message to any address (the console's), in the audit log with who asked. */
  queueTest(to: string): Promise<number> {
    return this.#peers.db.transaction(async () => {
      const id = await this.outbox.add({ kind: 'test', userId: null, recipient: to, lang: this.siteLanguage(), params: {} });
      await this.#peers.audit.record({ action: 'email.test', target: { type: 'email', id }, summary: `Queued test message ${id} to ${to}`, after: { to } });
      return id;
    });
  }

  /** A copy of message `id` queued (the console's "send again"), audited; undefined when there is no such message. */
  sendAgain(id: number): Promise<number | undefined> {
    return this.#peers.db.transaction(async () => {
      const copy = await this.outbox.again(id);
      if (copy !== undefined) {
        await this.#peers.audit.record({
          action: 'email.again',
          target: { type: 'email', id },
          summary: `Queued message ${id} again as ${copy}`,
          after: { copy },
        });
      }
      return copy;
    });
  }

  /** The account a form names by username or by email, exactly. */
  async #accountNamed(login: string): Promise<UserAccount | undefined> {
    const text = login.trim();
    if (!text || text.length > 191) return undefined;
    if (!text.includes('@')) return this.#peers.users.findByUsername(text);
    const key = text.toLowerCase();
    const found = await this.#peers.users.searchAccounts(text, { limit: 20 });
    return found.find((u) => u.email?.toLowerCase() === key);
  }

  async requestPasswordReset(login: string, lang: MailLanguage): Promise<void> {
    if (!this.#opts.configured()) return;
    const user = await this.#accountNamed(login);
    if (user?.email) await this.outbox.add(this.#message('reset-password', user, {}, lang));
  }

  async resendVerification(login: string, lang: MailLanguage): Promise<void> {
    if (!this.verificationRequired) return;
    const user = await this.#accountNamed(login);
    if (user?.email && !user.isVerified) await this.outbox.add(this.#message('verify-email', user, {}, lang));
  }

  /** After an account is created (in its transaction): its verification mail, when registration requires one. */
  async accountCreated(userId: number): Promise<void> {
    if (!this.verificationRequired) return;
    const user = await this.#peers.users.findById(userId);
    if (user?.email && !user.isVerified) await this.outbox.add(this.#message('verify-email', user, {}));
  }

  async resetTokenLive(token: string): Promise<boolean> {
    if (!TOKEN.test(token)) return false;
    const [row] = await EmailToken.select(
      this.#peers.db,
      sql`where ${T.tokenHash} = ${hashOf(token)} and ${T.purpose} = ${'reset-password'} and ${T.usedAt} is null and ${T.expiresAt} > ${now()}`,
    );
    return row !== undefined;
  }

  async resetPassword(token: string, password: string): Promise<{ userId: number }> {
    return this.#peers.db.transaction(async () => {
      const userId = await this.#useToken(token, 'reset-password');
      // In the token's transaction: a password refused leaves the token unused.
      await this.#peers.auth.setPassword(userId, password);
      return { userId };
    });
  }

  async verifyEmail(token: string): Promise<{ userId: number }> {
    return this.#peers.db.transaction(async () => {
      const userId = await this.#useToken(token, 'verify-email');
      await this.#peers.users.setVerified(userId, true);
      return { userId };
    });
  }

  /** Uses a live token up, once whatever the races: the database's conditional update decides. */
  async #useToken(token: string, purpose: TokenPurpose): Promise<number> {
    const invalid = new DomainError('EMAIL_TOKEN_INVALID', 'This link is unknown, used already or expired.');
    if (!TOKEN.test(token)) throw invalid;
    const { db } = this.#peers;
    const [row] = await EmailToken.select(db, sql`where ${T.tokenHash} = ${hashOf(token)} and ${T.purpose} = ${purpose}`);
    if (!row) throw invalid;
    const at = now();
    const { affectedRows } = await db.run(sql`update ${EmailToken} set ${T.usedAt} = ${at}
      where ${T.id} = ${row.id} and ${T.usedAt} is null and ${T.expiresAt} > ${at}`);
    if (affectedRows === 0) throw invalid;
    return row.userId;
  }

  async #newToken(userId: number, purpose: TokenPurpose, seconds: number): Promise<string> {
    const token = randomBytes(32).toString('hex');
    await EmailToken.insert(this.#peers.db, {
      tokenHash: hashOf(token),
      userId,
      purpose,
      expiresAt: addSeconds(now(), seconds),
      usedAt: null,
      createdAt: now(),
    });
    return token;
  }

  /** Writes a queued message: its template in its language, with links made now. */
  async compose(row: OutboxRow): Promise<Mail> {
    const settings = this.#peers.settings.get() as ReturnType<SettingsService['get']> & { storefrontTitle?: string };
    const lang = mailLanguage(row.lang);
    const params = JSON.parse(row.params) as Record<string, unknown>;
    const pages = this.#peers.storefront();
    const money = (cents: unknown, currency = settings.currency) => new Intl.NumberFormat(lang, { style: 'currency', currency }).format(Number(cents) / 100);
    const data: Record<string, unknown> = { ...params, site: settings.storefrontTitle ?? 'Community' };
    const kind = row.kind as MailKind;
    const link = (made: string | undefined) => {
      if (made === undefined) throw new Error('No address for the link: set plugins.storefront.publicUrl (the address players reach the site at).');
      return made;
    };
    switch (kind) {
      case 'order-receipt': {
        const tax = await this.#peers.payments()?.orderTax(Number(params.orderId));
        if (tax) {
          const paid = tax.inclusive ? undefined : money(Number(params.total) + tax.amount, tax.currency);
          data.tax = { country: tax.country, amount: money(tax.amount, tax.currency), paid, number: tax.sellerTaxNumber };
        }
        Object.assign(data, {
          id: params.orderId,
          total: money(params.total, String(params.currency)),
          link: params.guest
            ? pages?.guestOrderPage(await this.#newToken(Number(params.orderId), 'guest-order', this.#opts.guestOrderDays * 86400))
            : pages?.orderPage(Number(params.orderId)),
          date: displayTimestamp(String(params.date), settings.timezone).slice(0, 16),
        });
        break;
      }
      case 'topup-receipt':
        Object.assign(data, { amount: money(params.amount, String(params.currency)), credits: money(params.credits) });
        break;
      case 'ticket-reply':
        data.link = pages?.ticketPage(Number(params.ticketId));
        break;
      case 'reset-password':
        data.link = link(pages?.resetPasswordPage(await this.#newToken(row.userId!, 'reset-password', this.#opts.resetMinutes * 60)));
        data.minutes = this.#opts.resetMinutes;
        break;
      case 'verify-email':
        data.link = link(pages?.verifyEmailPage(await this.#newToken(row.userId!, 'verify-email', this.#opts.verifyHours * 3600)));
        data.hours = this.#opts.verifyHours;
        break;
      case 'subscription-reminder':
      case 'subscription-receipt':
      case 'subscription-failed':
        Object.assign(data, {
          product: params.productName,
          amount: money(params.amount, String(params.currency)),
          date: displayTimestamp(String(params.date), settings.timezone).slice(0, 16),
        });
        break;
      case 'test':
        break;
    }
    return { to: row.recipient, ...this.#templates.render(kind, lang, data) };
  }

  /** An account's email address (a staff member's, for the console's test). */
  async addressOf(userId: number): Promise<string | undefined> {
    return (await this.#peers.users.findById(userId))?.email ?? undefined;
  }

  /** The test message, written for `to` and sent at once rather than queued (the SMTP settings' test). */
  testMail(to: string): Promise<Mail> {
    return this.compose({ kind: 'test', userId: null, recipient: to, lang: this.siteLanguage(), params: '{}' } as OutboxRow);
  }

  /** Deletes tokens past their expiry; returns how many went. */
  async sweepTokens(): Promise<number> {
    const { affectedRows } = await this.#peers.db.run(sql`delete from ${EmailToken} where ${T.expiresAt} <= ${now()}`);
    return affectedRows;
  }
}
