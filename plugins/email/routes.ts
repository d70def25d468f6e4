/**
 * The mailed account links for front ends other than the storefront: ask for a password reset or
 * a new verification link (the answer never says whether the account exists), and use a link's token.
 */
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../core/errors.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import type { DbEmailService } from './service.ts';
import { Done, MailLinkBody, ResetBody, TokenBody } from './schemas.ts';
import { mailLanguage } from './templates.ts';

export async function emailRoutes(fastify: FastifyInstance, email: DbEmailService): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const tags = ['email'];
  const mailing = () => {
    if (!email.configured) throw new DomainError('SERVICE_UNAVAILABLE', 'This server sends no mail: SMTP is not set up.');
  };

  app.post('/api/email/password-reset', {
    schema: { tags, summary: 'Mail a password reset link to an account', body: MailLinkBody, response: { 200: Done }, errors: ['SERVICE_UNAVAILABLE'] },
  }, async ({ body }) => {
    mailing();
    await email.requestPasswordReset(body.login, mailLanguage(body.lang ?? email.siteLanguage()));
    return { status: true as const };
  });

  app.post('/api/email/password-reset/confirm', {
    schema: {
      tags, summary: 'Set a new password with a reset link\'s token (once)', body: ResetBody, response: { 200: Done },
      errors: ['EMAIL_TOKEN_INVALID', 'INVALID_PASSWORD'],
    },
  }, async ({ body }) => {
    await email.resetPassword(body.token, body.password);
    return { status: true as const };
  });

  app.post('/api/email/verify', {
    schema: {
      tags, summary: 'Confirm an account\'s email with a verification link\'s token (once)', body: TokenBody, response: { 200: Done },
      errors: ['EMAIL_TOKEN_INVALID'],
    },
  }, async ({ body }) => {
    await email.verifyEmail(body.token);
    return { status: true as const };
  });

  app.post('/api/email/verify/resend', {
    schema: {
      tags, summary: 'Mail a new verification link to an account still unverified', body: MailLinkBody, response: { 200: Done },
      errors: ['SERVICE_UNAVAILABLE'],
    },
  }, async ({ body }) => {
    mailing();
    await email.resendVerification(body.login, mailLanguage(body.lang ?? email.siteLanguage()));
    return { status: true as const };
  });
}
