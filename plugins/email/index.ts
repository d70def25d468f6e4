/**
 * Email: receipts, ticket answers, password reset and email verification over SMTP. Every mail
 * goes through the outbox table (written in the transaction of what it tells), so a mail is
 * neither sent for a change that rolled back nor lost when the server dies; without SMTP set
 * nothing is queued. A feature of its own, apart from webhooks and chat announcements.
 */
import { Type } from '@sinclair/typebox';
import { everyRound } from '../../core/background.ts';
import { auditRef } from '../../core/audit.ts';
import { ConfigError } from '../../core/config.ts';
import { defineFeature } from '../../core/features.ts';
import { authRef, secretsRef } from '../auth/contract.ts';
import { paymentsRef } from '../payments/contract.ts';
import { storefrontRef } from '../storefront/contract.ts';
import { supportRef } from '../support/contract.ts';
import { usersRef } from '../users/contract.ts';
import { emailSection } from './console.ts';
import { emailRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { Outbox } from './outbox.ts';
import { emailRoutes, mailLimits } from './routes.ts';
import { DbEmailService } from './service.ts';
import { SmtpSettings } from './smtp-settings.ts';
import { smtpRoutes } from './smtp-routes.ts';

const limit = (max: number, windowSeconds: number) =>
  Type.Object(
    {
      max: Type.Integer({ minimum: 0, default: max }),
      windowSeconds: Type.Integer({ minimum: 1, default: windowSeconds }),
    },
    { default: {} },
  );

const options = Type.Object({
  smtp: Type.Object(
    {
      /** The SMTP server; empty: no mail is queued or sent, and the console says so. */
      host: Type.String({ default: '' }),
      port: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
      /** TLS from the first byte (usually port 465); otherwise STARTTLS when the server offers it. */
      secure: Type.Boolean({ default: false }),
      /** Empty: no SMTP authentication. The password comes from the environment variable passwordEnv. */
      user: Type.String({ default: '' }),
      passwordEnv: Type.String({ minLength: 1, default: 'SMTP_PASSWORD' }),
      /** The sender: `Store <store@example.org>`. Required with a host. */
      from: Type.String({ default: '' }),
      /** Connecting, the greeting and each reply must come within this. */
      timeoutMs: Type.Integer({ minimum: 100, default: 15000 }),
    },
    { default: {} },
  ),
  /** A folder whose mail templates (`<kind>.eta`, as in plugins/email/templates) replace the shipped ones. Relative to the install. */
  themeDir: Type.String({ default: '' }),
  /** With SMTP set: accounts registered with an email must open the link mailed to them before they sign in. */
  requireVerification: Type.Boolean({ default: false }),
  /** How long a password reset link works. */
  resetMinutes: Type.Integer({ minimum: 1, default: 60 }),
  /** How long an email verification link works. */
  verifyHours: Type.Integer({ minimum: 1, default: 48 }),
  /** How long the link in a guest's receipt shows the order. */
  guestOrderDays: Type.Integer({ minimum: 1, default: 90 }),
  /** Longest wait before queued mail is looked for (mail is also sent at once after the change that queued it commits). */
  pollMs: Type.Integer({ minimum: 10, default: 5000 }),
  /** A failed send waits retryBaseMs × 2^(attempts − 1), at most retryMaxMs; after maxAttempts it is marked failed. */
  retryBaseMs: Type.Integer({ minimum: 1, default: 30000 }),
  retryMaxMs: Type.Integer({ minimum: 1, default: 3600000 }),
  maxAttempts: Type.Integer({ minimum: 1, default: 10 }),
  /** The API's routes that mail a link: requests per window for one account asked for, and for one client address; max 0 = no limit. */
  rateLimit: Type.Object({ perAddress: limit(5, 3600), perIp: limit(20, 3600) }, { default: {} }),
  /** Messages the console lists. */
  recentShown: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  /** How often used and expired link tokens are deleted. */
  sweepSeconds: Type.Integer({ minimum: 1, default: 3600 }),
});

export default defineFeature({
  name: 'email',
  requires: [usersRef, authRef],
  options,
  entities,
  migrations,
  async register(app, { db, events, services, settings, env, options: opts, log }) {
    const { smtp } = opts;
    if (smtp.host !== '' && !smtp.from) throw new ConfigError('plugins.email.smtp.from: the sender address is required when plugins.email.smtp.host is set.');
    const audit = services.get(auditRef);
    const server = new SmtpSettings(smtp, { env, settings, secrets: services.get(secretsRef), db, audit });
    const outbox = new Outbox(
      db,
      { ...opts, leaseMs: smtp.timeoutMs * 4 + 1000 },
      (row) => email.compose(row),
      (mail) => server.mailer().send(mail),
    );
    const limits = mailLimits(app, opts.rateLimit);
    const email: DbEmailService = new DbEmailService(
      {
        db,
        audit,
        settings,
        users: services.get(usersRef),
        auth: services.get(authRef),
        storefront: () => services.find(storefrontRef),
        payments: () => services.find(paymentsRef),
      },
      {
        configured: () => server.configured(),
        requireVerification: opts.requireVerification,
        resetMinutes: opts.resetMinutes,
        verifyHours: opts.verifyHours,
        guestOrderDays: opts.guestOrderDays,
        themeDir: opts.themeDir,
      },
      outbox,
      limits.perAccount,
    );
    email.smtp = server;
    services.provide(emailRef, email);
    await emailRoutes(app, email, limits);
    smtpRoutes(app, server, email);
    everyRound(app, log, 'email token sweep', opts.sweepSeconds * 1000, () => email.sweepTokens());
    if (!server.configured()) log.info('email is off until an SMTP server is set in the console (Email) or plugins.email.smtp');
    // Asked at each registration: an SMTP server set in the console later turns it on without a restart.
    if (opts.requireVerification) services.get(authRef).requireEmailVerification(() => email.verificationRequired);

    // Inside the transactions that cause them: a mail commits or rolls back with its cause.
    events.onCommitting('store.order.completed', (order) => {
      if (order.items.length === 0) return undefined;
      const receipt = {
        orderId: order.orderId,
        total: order.total,
        currency: order.currency,
        date: order.creationDate,
        items: order.items.map((i) => ({ productName: i.productName, quantity: i.quantity })),
        ...(order.test ? { test: true } : {}),
      };
      return order.userId === 0
        ? email.queueGuestReceipt(order.guestEmail ?? null, order.username, receipt)
        : email.queueFor('order-receipt', order.userId, receipt);
    });
    events.onCommitting('payments.completed', (payment) =>
      payment.credits <= 0
        ? undefined
        : email.queueFor('topup-receipt', payment.userId, {
            paymentId: payment.paymentId,
            amount: payment.amount,
            currency: payment.currency,
            credits: payment.credits,
          }),
    );
    events.onCommitting('support.ticket.replied', async (reply) => {
      const support = services.find(supportRef);
      if (!reply.isAdmin || !support) return;
      const ticket = await support.getTicket(reply.ticketId);
      const owner = Number(ticket.accountID);
      if (owner === reply.accountId) return;
      const message = ticket.messages.find((m) => Number(m.id) === reply.messageId)?.message ?? '';
      await email.queueFor('ticket-reply', owner, { ticketId: reply.ticketId, title: ticket.title, message });
    });
    events.onCommitting('users.created', (user) => email.accountCreated(user.userId));

    // Other processes' mail, retries, and what a killed process left.
    everyRound(app, log, 'email outbox', opts.pollMs, () => outbox.kick());
    app.addHook('onClose', async () => {
      await outbox.stop();
      server.close();
    });
    return email;
  },
  console: [emailSection],
  errors: { EMAIL_TOKEN_INVALID: 400, SMTP_ERROR: 502 },
});
