/**
 * The OpenAPI document at /docs/json: what every route gets without writing it by hand (an
 * operationId, the three body encodings, described responses with the shared error shape), and
 * the introduction a reader needs before the first call.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import { routeScopes } from './api-keys.ts';
import { rootDir } from './config.ts';
import { errorStatus } from './errors.ts';

const INTRODUCTION = `The API behind a game community's web store, credit wallet, support desk, donation boards,
item storage, vote links and chat-bot integration.

**Keys.** Every \`/api\` call carries \`X-Api-Key\`. Keys are named and scoped: \`api\` reaches every
public route, \`admin\` also reaches \`/api/admin/…\`; a narrower key names features (\`delivery\`) or a
feature's actions (\`credits:read\`, \`credits:write\`, \`store:buy\`), and each route says which scopes
reach it. \`GET /health\`, \`GET /metrics\` (its own rule) and
this document need no key.

**Bodies.** Every POST, PUT and PATCH body may be JSON, \`application/x-www-form-urlencoded\` or
\`multipart/form-data\`, with the same meaning; form keys use PHP bracket notation
(\`products[0][id]=5\`). Unknown fields are ignored.

**Answers.** Success bodies carry \`status: true\` (or \`success: true\` where the contract says so).
Row-like objects (profiles, products, orders, tickets, …) give every value as a JSON string: ids
\`"12"\`, flags \`"0"\`/\`"1"\`, money \`"12.50"\`. Every error is \`{status: false, error: CODE, message}\`
with the HTTP status listed for its code.

**Time.** Timestamps read \`YYYY-MM-DD HH:MM:SS\` in the site's time zone (setting \`timezone\`, UTC by
default); \`1000-01-01 00:00:00\` means "never" or "permanent". Money is exact: two decimals, never
a float inside the server.

**Retries.** Calls that move money, credits or items take an \`Idempotency-Key\` header (Stripe's
semantics): a repeat with the same key and request answers the first answer again, marked
\`Idempotent-Replayed: true\`, and moves nothing twice; the key with another request is 422
\`IDEMPOTENCY_KEY_REUSED\`, a repeat while the first still runs 409 \`IDEMPOTENCY_IN_PROGRESS\`.

**Request ids.** Send \`X-Request-Id\` to have your id echoed back and logged; otherwise one is made.`;

declare module 'fastify' {
  interface FastifySchema {
    /** The domain error codes the route can answer, beyond those errorsOf adds for what it is (listed in the document). */
    errors?: readonly string[];
  }
}

const BODY_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/** `GET /api/users/{id}/roles` → `getUsersByIdRoles`: stable, unique per method and path. */
export function operationId(method: string, url: string): string {
  const words = url
    .split('/')
    .filter((s) => s && s !== 'api')
    .map((segment) => {
      const param = /^[:{](\w+)\}?$/.exec(segment)?.[1];
      const name = param ? `by-${param}` : segment;
      return name
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map((w) => w[0]!.toUpperCase() + w.slice(1))
        .join('');
    });
  return method.toLowerCase() + words.join('');
}

const SUCCESS_DESCRIPTIONS: Record<string, string> = {
  200: 'Success',
  201: 'Created',
  204: 'No content',
};

type RouteSchema = Record<string, unknown> & { response?: Record<string, unknown>; body?: unknown; consumes?: string[]; errors?: readonly string[] };

interface ErrorDoc {
  why: string;
  codes: string[];
}

/**
 * The errors a route can answer: those of what it is (a key check, an admin scope, input to
 * validate, a body to parse, the database behind it), plus the domain codes it declares in its
 * schema's `errors` list.
 */
function errorsOf(method: string, url: string, schema: RouteSchema, config: FastifyContextConfig | undefined): Map<number, ErrorDoc> {
  const errors = new Map<number, ErrorDoc>();
  const add = (code: string, why: string) => {
    const status = errorStatus[code] ?? 400;
    const doc = errors.get(status) ?? { why, codes: [] };
    if (!doc.codes.includes(code)) doc.codes.push(code);
    errors.set(status, doc);
  };
  // Even a route without input answers 400 to a URL the router cannot read (bad percent-encoding).
  add('VALIDATION_ERROR', 'The URL or a field is missing or malformed');
  for (const code of schema.errors ?? []) add(code, 'The request cannot be carried out');
  if (url.startsWith('/api/') && !config?.noApiKey) {
    add('INVALID_API_KEY', 'X-Api-Key is missing or unknown');
    add('FORBIDDEN', url.startsWith('/api/admin/') ? 'The key lacks the admin scope' : 'The key lacks a scope that reaches this route');
  }
  // Every method but GET and HEAD has its body read, whether or not the route looks at it.
  if (schema.body || !['GET', 'HEAD'].includes(method)) {
    add('PAYLOAD_TOO_LARGE', 'The body or a field is over its limit');
    add('UNSUPPORTED_MEDIA_TYPE', 'The body is in another content type');
  }
  add('INTERNAL_ERROR', 'A fault; the message reveals no internals and names the request id');
  add('SERVICE_UNAVAILABLE', 'The database is unavailable; retry after Retry-After');
  return errors;
}

/**
 * For tests (BuildOptions.selfChecks): an error answer whose code the route's document does
 * not list, or lists under another status, becomes a 500 UNDECLARED_ERROR naming both. Every test
 * that drives a failure then also checks the document, which would otherwise drift from the code
 * unnoticed. Undocumented routes (no schema, hidden, the docs' own) and unmatched URLs are skipped.
 */
export function checkDeclaredErrors(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const { url, schema, config } = request.routeOptions;
    const { method } = request;
    if (reply.statusCode < 400 || typeof payload !== 'string' || !url || url.startsWith('/docs')) return payload;
    if (!schema || (schema as RouteSchema).hide) return payload;
    let body: { error?: unknown; code?: unknown };
    try {
      body = JSON.parse(payload) as typeof body;
    } catch {
      return payload;
    }
    // On a route a game plugin calls, `error` holds the plugin's nearest code and `code` ours.
    const code = String(body.code ?? body.error);
    const documented = errorsOf(method, url, schema as RouteSchema, config).get(reply.statusCode)?.codes ?? [];
    if (documented.includes(code)) return payload;
    const message =
      `${method} ${url} answered ${reply.statusCode} ${code}, which its OpenAPI document does not list for that status: add it to the route's ` +
      `schema.errors.`;
    process.stderr.write(`${message}\n`);
    reply.code(500);
    return JSON.stringify({ status: false, error: 'UNDECLARED_ERROR', message });
  });
}

/** Which keys may call the route, as the key check decides it. */
function scopeNote(url: string, method: string, config: FastifyContextConfig | undefined): string | undefined {
  if (!url.startsWith('/api/') || config?.noApiKey) return undefined;
  if (url.startsWith('/api/admin/')) return 'Scope: `admin`.';
  const scoped = routeScopes(config?.feature, method, config?.scopeAction).map((s) => `\`${s}\``);
  return `Scope: \`api\`${scoped.length ? ` or ${scoped.join(' or ')}` : ''}.`;
}

function transform({ schema, url, route }: { schema: RouteSchema; url: string; route: { method: string | string[]; config?: FastifyContextConfig } }) {
  if (!schema || schema.hide) return { schema, url };
  const method = Array.isArray(route.method) ? route.method[0]! : route.method;
  const out: RouteSchema = { ...schema };
  out.operationId ??= operationId(method, url);
  const scope = scopeNote(url, method, route.config);
  const client = route.config?.clientErrors;
  const codes =
    client &&
    `Errors: called by ${client.client}, which reads only its own codes: to a caller whose User-Agent is \`Java/<version>\` ` +
      '(or whose key is marked for client codes), `error` carries the nearest one it knows, and `code` ours, when they differ; ' +
      'everyone else gets ours in `error` (docs/clients.md).';
  if (scope || codes) out.description = [schema.description, scope, codes].filter(Boolean).join('\n\n');
  if (schema.body && !schema.consumes) out.consumes = BODY_TYPES;
  const response: Record<string, unknown> = {};
  for (const [status, body] of Object.entries(schema.response ?? {})) {
    // The catch-all error entries the host adds for serialization are spelled out below instead.
    if (/^[45]xx$/.test(status)) continue;
    const given = body as Record<string, unknown>;
    response[status] = { ...given, description: given.description ?? SUCCESS_DESCRIPTIONS[status] ?? 'Success' };
  }
  if (route.config?.noApiKey) out.security = [];
  for (const [status, { why, codes }] of errorsOf(method, url, schema, route.config)) {
    response[status] ??= { $ref: 'ErrorResponse', description: `${why}: ${codes.join(', ')}` };
  }
  delete out.errors;
  out.response = response;
  return { schema: out, url };
}

/** The project's license as package.json names it (an SPDX identifier). */
function license(): { name: string; identifier: string } {
  const { license: id } = JSON.parse(readFileSync(join(rootDir, 'package.json'), 'utf8')) as { license: string };
  return { name: id, identifier: id };
}

export function openapiOptions(): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Community platform API', version: '1', description: INTRODUCTION, license: license() },
      servers: [{ url: '/', description: 'This server' }],
      components: { securitySchemes: { apiKey: { type: 'apiKey', name: 'X-Api-Key', in: 'header' } } },
      security: [{ apiKey: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: transform as never,
  };
}
