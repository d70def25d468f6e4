/**
 * What every server-rendered feature (the staff console, the storefront) needs the same way:
 * random tokens compared in constant time, form bodies read as text, the security headers of a
 * page, a `next` address kept on this site, and keeping pages out of the API's OpenAPI document.
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

const HERE = 'http://site.invalid';

/**
 * Where to go back to after signing in (`next`): a path of this site under `base` ('' = anywhere
 * on it), resolved as a browser would and written back percent-encoded, so what the Location
 * header says is what the browser opens. Undefined for anything else: another origin (`//host`,
 * `/\\host`, a scheme), a control character, a backslash or white space (which browsers drop or
 * read as `/`: `/\t/host` is `//host`), a path climbing out of `base`.
 */
export function localPath(next: unknown, base: string): string | undefined {
  if (typeof next !== 'string' || !next.startsWith('/') || next.length > 2048 || /[\s\\\p{Cc}]/u.test(next)) return undefined;
  let url: URL;
  try {
    url = new URL(next, `${HERE}${base}/`);
  } catch {
    return undefined;
  }
  const path = url.pathname;
  // `/.//host` resolves to the path `//host`, which a browser reads as another host.
  if (url.origin !== HERE || path.startsWith('//') || !(path === base || path.startsWith(`${base}/`))) return undefined;
  return `${path}${url.search}${url.hash}`;
}

/** A page's headers: nothing loaded from elsewhere, no inline script, no framing. `images` widens img-src (a logo on a CDN). */
export function pageHeaders(opts: { cache: string; images?: string }): Record<string, string> {
  return {
    'cache-control': opts.cache,
    'content-security-policy':
      `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:${opts.images ? ` ${opts.images}` : ''}; ` +
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
