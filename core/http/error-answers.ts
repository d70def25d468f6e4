/** Error answers: every failure, whoever raised it (a feature, Fastify, the router, Node), in the API's error shape. */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { readsClientCodes } from '../clients.ts';
import { isCommitUnknown, isDatabaseUnavailable, isLockConflict } from '../db/errors.ts';
import { DomainError, errorStatus } from '../errors.ts';

/** The error body every failure answers with (decisions.md §2). */
export const ErrorResponse = Type.Object(
  {
    status: Type.Literal(false),
    error: Type.String(),
    message: Type.String(),
    code: Type.Optional(Type.String({ description: 'our precise code, where `error` carries the nearest one a game plugin knows (docs/clients.md)' })),
  },
  { $id: 'ErrorResponse' },
);

const FASTIFY_CODES: Record<string, [string, string?]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'The body is larger than allowed.'],
  FST_REQ_FILE_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'A field is larger than allowed.'],
  FST_FILES_LIMIT: ['PAYLOAD_TOO_LARGE', 'The body has too many fields.'],
  FST_FIELDS_LIMIT: ['PAYLOAD_TOO_LARGE', 'The body has too many fields.'],
  FST_PARTS_LIMIT: ['PAYLOAD_TOO_LARGE', 'The body has too many fields.'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Send the body as multipart/form-data, application/x-www-form-urlencoded or application/json.'],
  FST_INVALID_MULTIPART_CONTENT_TYPE: ['UNSUPPORTED_MEDIA_TYPE'],
  FST_ERR_RATE_LIMIT_EXCEEDED: ['RATE_LIMITED'],
};

export function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const missing = (first.params as { missingProperty?: string }).missingProperty;
  const where = (first.instancePath || '').replace(/^\//, '').replaceAll('/', '.');
  const field = missing ? [where, missing].filter(Boolean).join('.') : where || err.validationContext || 'request';
  if (missing) return `${field} is required`;
  return `${field} ${first.message ?? 'is invalid'}`;
}

const CLIENT_ERRORS: Record<string, [string, string]> = {
  HPE_HEADER_OVERFLOW: ['HEADERS_TOO_LARGE', 'The request headers are larger than allowed.'],
  ERR_HTTP_REQUEST_TIMEOUT: ['REQUEST_TIMEOUT', 'The request did not arrive in time.'],
};

/**
 * Fastify's `clientErrorHandler`: Node refuses some requests before Fastify sees them (headers
 * too large, a malformed request line, a request past its deadline). They are answered in the
 * API's error shape too, and the connection is closed: the parser cannot go on after them.
 */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, message] = CLIENT_ERRORS[err.code ?? ''] ?? ['VALIDATION_ERROR', 'The request is not well-formed HTTP.'];
  const status = errorStatus[code]!;
  const body = JSON.stringify({ status: false, error: code, message });
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ` +
      `${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/**
 * The error body; on a route a real client calls, when that client is the caller, a code it
 * lacks becomes the nearest it knows, ours in `code`.
 */
function errorBody(reply: FastifyReply, code: string, message: string, details?: Record<string, unknown>) {
  const client = reply.request.routeOptions.config?.clientErrors;
  if (client && !client.known.has(code) && readsClientCodes(reply.request)) {
    return { ...details, status: false, error: client.nearest(code, message), message, code };
  }
  return { ...details, status: false, error: code, message };
}

/**
 * An error answer. Refused before its body has arrived (no key, too large, ...), the socket closes
 * with it: kept open, Node would read and drop the rest of the body, at whatever pace the client
 * chose to send it.
 */
function answer(reply: FastifyReply, status: number, code: string, message: string, details?: Record<string, unknown>): FastifyReply {
  if (!reply.request.raw.complete) reply.header('connection', 'close');
  return reply.code(status).send(errorBody(reply, code, message, details));
}

export function send(reply: FastifyReply, code: string, message: string, details?: Record<string, unknown>): FastifyReply {
  return answer(reply, errorStatus[code] ?? 400, code, message, details);
}

const ROUTER_ERRORS: Record<string, string> = {
  FST_ERR_BAD_URL: 'The URL is not valid: it holds a bad percent-encoding.',
  FST_ERR_MAX_PARAM_LENGTH: 'A path parameter is longer than allowed.',
};

/**
 * Fastify's `frameworkErrors`: the router refuses some URLs before any hook or error handler runs,
 * and would answer in its own shape. Whatever reaches here must be answered, or the request hangs.
 */
export function routerErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message = ROUTER_ERRORS[err.code];
  if (message) {
    send(reply, 'VALIDATION_ERROR', message);
    return;
  }
  request.log.error({ err }, 'router failed');
  send(reply, 'INTERNAL_ERROR', `An internal error occurred (request ${request.id}).`);
}

/** One object for every route, so they all share one compiled error serializer. */
const ERROR_REF = Type.Ref('ErrorResponse');

export function errorHandling(app: FastifyInstance, retryAfterSeconds: number): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof DomainError) {
      const { retryAfterSeconds, details } = err as DomainError;
      if (retryAfterSeconds !== undefined) reply.header('Retry-After', String(retryAfterSeconds));
      return send(reply, err.code, err.message, details);
    }
    if (err.validation) return send(reply, 'VALIDATION_ERROR', validationMessage(err));
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) {
      if (known[0] === 'RATE_LIMITED') return send(reply, 'RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.');
      return send(reply, known[0], known[1] ?? err.message);
    }
    // Checked first: a commit cut off is "unavailable" too, but it may have happened.
    if (isCommitUnknown(err)) {
      request.log.error({ err }, 'commit outcome unknown');
      reply.header('Retry-After', String(retryAfterSeconds));
      return send(
        reply,
        'SERVICE_UNAVAILABLE',
        'The database was lost while this change was committing: it may or may not have been made. ' +
          'Check before sending it again, or send it again with the same Idempotency-Key.',
      );
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err }, 'database unavailable');
      reply.header('Retry-After', String(retryAfterSeconds));
      return send(reply, 'SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly.');
    }
    // Still losing to other transactions' locks after the retries: nothing changed, and the same
    // request may pass in a moment, so it is the same answer as a database that is briefly away.
    if (isLockConflict(err)) {
      request.log.warn({ err }, 'database busy: lock conflicts outlasted the retries');
      reply.header('Retry-After', String(retryAfterSeconds));
      return send(reply, 'SERVICE_UNAVAILABLE', 'The database is busy with other writes; retry shortly.');
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return answer(reply, status, status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR', err.message);
    }
    request.log.error({ err }, 'request failed');
    return send(reply, 'INTERNAL_ERROR', `An internal error occurred (request ${request.id}).`);
  });
  app.setNotFoundHandler((request, reply) => send(reply, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?', 1)[0]}.`));
  // Every route documents the error shape, and a success body can never leak an `error` key:
  // response schemas only emit declared fields.
  app.addSchema(ErrorResponse);
  app.addHook('onRoute', (route) => {
    if (!route.schema || route.url.startsWith('/docs')) return;
    const response = (route.schema.response ?? {}) as Record<string, unknown>;
    response['4xx'] ??= ERROR_REF;
    response['5xx'] ??= ERROR_REF;
    route.schema.response = response;
  });
}
