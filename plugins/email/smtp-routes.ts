/** The SMTP server in the admin API, as the console sets it: read (password never whole), change, and send a test. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as S from '../../core/schemas.ts';
import type { DbEmailService } from './service.ts';
import type { SmtpPatch, SmtpSettings } from './smtp-settings.ts';

const source = Type.Union([Type.Literal('config'), Type.Literal('environment'), Type.Literal('console')], {
  description: 'config (the configuration file) and environment win and cannot be changed here',
});

const SmtpView = Type.Object({
  host: Type.String({ examples: ['smtp.example.org'] }),
  port: Type.Integer({ examples: [587] }),
  secure: Type.Boolean({ description: 'TLS from the first byte (port 465); otherwise STARTTLS when offered' }),
  user: Type.String({ description: 'empty: no SMTP sign-in', examples: ['store@example.org'] }),
  from: Type.String({ examples: ['Store <store@example.org>'] }),
  passwordSet: Type.Boolean(),
  passwordEnding: Type.String({ description: "the password's last 4 characters when it is longer than 8; never the whole", examples: ['x9Qa'] }),
  sources: Type.Object({ host: source, port: source, secure: source, user: source, from: source, password: source }),
});

export const SmtpBody = Type.Object(
  {
    host: Type.Optional(Type.String({ maxLength: 253, description: 'empty: no mail is sent', examples: ['smtp.example.org'] })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    secure: Type.Optional(Type.Boolean()),
    user: Type.Optional(Type.String({ maxLength: 191 })),
    password: Type.Optional(Type.String({ maxLength: 512, description: 'empty or left out: the stored password stays', writeOnly: true })),
    from: Type.Optional(Type.String({ maxLength: 191, examples: ['Store <store@example.org>'] })),
  },
  { additionalProperties: false },
);

const TestBody = Type.Object({ to: Type.String({ format: 'email', maxLength: 191, examples: ['owner@example.org'] }) }, { additionalProperties: false });

export function smtpRoutes(fastify: FastifyInstance, smtp: SmtpSettings, email: DbEmailService): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  const response = { 200: S.ok({ data: SmtpView }) };
  app.get('/api/admin/email/smtp', { schema: { tags: ['email'], summary: 'The SMTP server mail is sent through', response } }, async () => ({
    status: true as const,
    data: smtp.view(),
  }));
  app.patch(
    '/api/admin/email/smtp',
    {
      schema: {
        tags: ['email'],
        summary: 'Change the SMTP server',
        description: 'Applied on every instance without a restart. Fields set in the configuration file or the environment are refused.',
        body: SmtpBody,
        response,
        errors: ['VALIDATION_ERROR', 'SERVICE_UNAVAILABLE'],
      },
    },
    async (request) => ({ status: true as const, data: await smtp.update(request.body as SmtpPatch) }),
  );
  app.post(
    '/api/admin/email/smtp/test',
    {
      schema: {
        tags: ['email'],
        summary: 'Send a test message now through the SMTP server',
        body: TestBody,
        response: { 200: S.ok() },
        errors: ['VALIDATION_ERROR', 'SERVICE_UNAVAILABLE', 'SMTP_ERROR'],
      },
    },
    async (request) => {
      await smtp.sendNow(await email.testMail(request.body.to));
      return { status: true as const };
    },
  );
}
