/**
 * How the storefront's pages are routed and how they say a refusal: shared by every page group
 * (catalogue and basket, account, payments, recovery), so none of them imports another for it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, errorStatus } from '../../core/errors.ts';
import { formOf } from '../../core/pages.ts';
import { MAX_QUANTITY } from './basket.ts';
import { LANGUAGES, type MessageKey } from './messages.ts';
import type { Site, Visit } from './site.ts';

export interface RateLimit {
  max: number;
  windowSeconds: number;
}

type Handler = (visit: Visit, form: Record<string, string>) => Promise<FastifyReply>;

export interface PageRouter {
  get(path: string, handler: Handler, opts?: { signedIn?: boolean }): void;
  post(path: string, handler: Handler, opts?: { signedIn?: boolean; limit?: { name: string; rate: RateLimit } }): void;
}

/**
 * Pages as routes: the visit made first; a post must carry the visit's CSRF token; a page for
 * players only sends others to sign in and back. A per-route rate limit counts per address.
 */
export function pageRouter(app: FastifyInstance, site: Site): PageRouter {
  const route =
    (method: 'GET' | 'POST') =>
    (path: string, handler: Handler, opts: { signedIn?: boolean; limit?: { name: string; rate: RateLimit } } = {}) => {
      const url = path === '/' ? site.u('/') : site.u(path);
      app.route({
        method,
        url,
        config: opts.limit
          ? {
              rateLimit: {
                max: opts.limit.rate.max,
                timeWindow: opts.limit.rate.windowSeconds * 1000,
                keyGenerator: (request: FastifyRequest) => `storefront-${opts.limit!.name}:${request.ip}`,
                errorResponseBuilder: (_request: FastifyRequest, ctx: { after: string }) =>
                  Object.assign(new DomainError('RATE_LIMITED', ctx.after), { after: ctx.after }),
              },
            }
          : {},
        handler: async (request, reply) => {
          const visit = await site.visit(request, reply);
          const form = method === 'POST' ? formOf(request.body) : formOf(request.query);
          if (method === 'POST' && !site.checkCsrf(visit, form)) return site.message(visit, 403, visit.t('error.title'), visit.t('error.csrf'));
          if (opts.signedIn && !visit.player) {
            const next = method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
            return site.redirect(visit, `${site.u('/login')}${next}`, visit.t('signIn.required'));
          }
          return handler(visit, form);
        },
      });
    };
  return { get: route('GET'), post: route('POST') };
}

/** A refusal said in the player's language when the catalogue has words for its code, else in the service's. */
export function refusal(visit: Visit, err: DomainError, values: Record<string, string | number> = {}): string {
  const key = `error.${err.code}`;
  return Object.hasOwn(LANGUAGES.en, key) ? visit.t(key as MessageKey, { detail: err.message, max: MAX_QUANTITY, ...values }) : err.message;
}

/** A refusal the page can show (a client's mistake), not a fault. */
export function refused(err: unknown): err is DomainError {
  return err instanceof DomainError && (errorStatus[err.code] ?? 500) < 500;
}
