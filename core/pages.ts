/**
 * What every server-rendered feature (the staff console, the storefront) needs the same way:
 * random tokens compared in constant time, form bodies read as text, the security headers of a
 * page, and keeping pages out of the API's OpenAPI document.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/** Constant-time comparison of two tokens of any length. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** 32 random bytes as 64 hex digits. */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

/** Text fields of a parsed form body: a repeated field keeps its first value, nested ones are dropped. */
export function formOf(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof body !== 'object' || body === null) return out;
  for (const [k, v] of Object.entries(body)) {
    const first = Array.isArray(v) ? v[0] : v;
    if (typeof first === 'string' || typeof first === 'number') out[k] = String(first);
  }
  return out;
}

/** A page's headers: nothing loaded from elsewhere, no inline script, no framing. `images` widens img-src (a logo on a CDN). */
export function pageHeaders(opts: { cache: string; images?: string }): Record<string, string> {
  return {
    'cache-control': opts.cache,
    'content-security-policy': `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:${opts.images ? ` ${opts.images}` : ''}; ` +
      `frame-ancestors 'none'; form-action 'self'; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
  };
}

/** Pages are HTML for people, not API operations: they stay out of the OpenAPI document. */
export function pagesOnly(scope: FastifyInstance): void {
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
}
