/**
 * The mailed account links for front ends other than the storefront: ask for a password reset or
 * a new verification link (the answer never says whether the account exists), and use a link's token.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../../core/errors.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import { lookupKey } from '../users/contract.ts';
import type { DbEmailService } from './service.ts';
import { Done, MailLinkBody, ResetBody, TokenBody } from './schemas.ts';
import { mailLanguage } from './templates.ts';

export interface RateLimit {
  /** Requests per window; 0 = no limit. */
  max: number;
  windowSeconds: number;
}

export interface MailLimits {
  perAddress: RateLimit;
  perIp: RateLimit;
}

/** One limit counted in the database for the key a request gives; the seconds left of its window when it is over. */
type Limiter = (request: FastifyRequest, key: string) => Promise<number | undefined>;

function limiter(app: FastifyInstance, limit: RateLimit): Limiter | undefined {
  if (limit.max <= 0) return undefined;
  const keys = new WeakMap<FastifyRequest, string>();
  const counted = app.createRateLimit({ max: limit.max, timeWindow: limit.windowSeconds * 1000, keyGenerator: (request) => keys.get(request)! });
  return async (request, key) => {
    keys.set(request, key);
    const res = await counted(request);
    return !res.isAllowed && res.isExceeded ? res.ttlInSeconds : undefined;
  };
}

const refused = (seconds: number) =>
  new DomainError('RATE_LIMITED', 'Too many mailed links asked for; retry after the time in Retry-After.', { retryAfterSeconds: seconds });

/**
 * Mailed links are counted per account asked for (as accounts are looked up, known or not, so a
 * refusal says nothing of whether it exists) and per client: no address is flooded with mail and
 * no client asks for links without end. Counted in the database (core/rate-limits.ts), so every
 * instance shares the count. The account's count is one for every way in (both routes here, the
 * storefront's forms: `EmailService.countMailLink`), as all of them mail the same address.
 */
export function mailLimits(
  app: FastifyInstance,
  limits: MailLimits,
): { perAccount: (request: FastifyRequest, login: string) => Promise<void>; perClient: (request: FastifyRequest) => Promise<void> } {
  const perAddress = limiter(app, limits.perAddress);
  const perIp = limiter(app, limits.perIp);
  return {
    async perAccount(request, login) {
      const wait = await perAddress?.(request, `email-mail-link:account:${lookupKey(login.trim())}`);
      if (wait !== undefined) throw refused(wait);
    },
    async perClient(request) {
      const wait = await perIp?.(request, `email-mail-link:ip:${request.ip}`);
      if (wait !== undefined) throw refused(wait);
    },
  };
}

export async function emailRoutes(fastify: FastifyInstance, email: DbEmailService, limits: ReturnType<typeof mailLimits>): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const tags = ['email'];
  // Without SMTP the mail feature is off in effect: decisions.md answers a disabled feature's route with NOT_FOUND.
  const mailing = () => {
    if (!email.configured) throw new DomainError('NOT_FOUND', 'This server sends no mail: SMTP is not set up.');
  };
  // A preHandler: after validation, so a malformed body is not counted, and before anything is queued.
  const preHandler = async (request: FastifyRequest) => {
    await limits.perAccount(request, (request.body as { login: string }).login);
    await limits.perClient(request);
  };

  app.post(
    '/api/email/password-reset',
    {
      schema: {
        tags,
        summary: 'Mail a password reset link to an account',
        body: MailLinkBody,
        response: { 200: Done },
        errors: ['NOT_FOUND', 'RATE_LIMITED'],
      },
      preHandler,
    },
    async ({ body }) => {
      mailing();
      await email.requestPasswordReset(body.login, mailLanguage(body.lang ?? email.siteLanguage()));
      return { status: true as const };
    },
  );

  app.post(
    '/api/email/password-reset/confirm',
    {
      schema: {
        tags,
        summary: "Set a new password with a reset link's token (once)",
        body: ResetBody,
        response: { 200: Done },
        errors: ['EMAIL_TOKEN_INVALID', 'INVALID_PASSWORD'],
      },
    },
    async ({ body }) => {
      await email.resetPassword(body.token, body.password);
      return { status: true as const };
    },
  );

  app.post(
    '/api/email/verify',
    {
      schema: {
        tags,
        summary: "Confirm an account's email with a verification link's token (once)",
        body: TokenBody,
        response: { 200: Done },
        errors: ['EMAIL_TOKEN_INVALID'],
      },
    },
    async ({ body }) => {
      await email.verifyEmail(body.token);
      return { status: true as const };
    },
  );

  app.post(
    '/api/email/verify/resend',
    {
      schema: {
        tags,
        summary: 'Mail a new verification link to an account still unverified',
        body: MailLinkBody,
        response: { 200: Done },
        errors: ['NOT_FOUND', 'RATE_LIMITED'],
      },
      preHandler,
    },
    async ({ body }) => {
      mailing();
      await email.resendVerification(body.login, mailLanguage(body.lang ?? email.siteLanguage()));
      return { status: true as const };
    },
  );
}
