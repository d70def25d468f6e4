import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart, { type FastifyMultipartBaseOptions } from '@fastify/multipart';
import qs from 'qs';
import { Type } from '@sinclair/typebox';
import { isLockConflict, sqliteCode } from './db/errors.ts';
import { DomainError, errorStatus } from './errors.ts';
import { readsClientCodes } from './clients.ts';

export interface BodyLimits {
  /** Longest value of one field, in bytes. */
  fieldLimit: number;
  /** Most fields in one body. */
  maxFields: number;
  /** Longest body, in bytes (Fastify enforces it for the other encodings, not for multipart). */
  bodyLimit: number;
}

/** A file a route takes as bytes (see `fileUpload`); `tooLarge` when it was cut at the route's limit. */
export interface UploadedFile {
  filename: string;
  data: Buffer;
  tooLarge: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The multipart file part `field` arrives as bytes in `request.upload`, at most `maxBytes` of it; every other part is read as for any route. */
    fileUpload?: { field: string; maxBytes: number };
  }
  interface FastifyRequest {
    upload?: UploadedFile;
  }
}

/** The error body every failure answers with (decisions.md §2). */
export const ErrorResponse = Type.Object({
  status: Type.Literal(false),
  error: Type.String(),
  message: Type.String(),
  code: Type.Optional(Type.String({ description: 'our precise code, where `error` carries the nearest one a game plugin knows (docs/clients.md)' })),
}, { $id: 'ErrorResponse' });

/** How an integer or a decimal is written, in every encoding: no sign but `-`, no hex, exponent or space. */
const PLAIN_INTEGER = /^-?[0-9]+$/;
const PLAIN_DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;

/**
 * JSON.parse keeps a number written in any other notation (`1e2`) as the text it was written as,
 * so it meets the same rule as the string `"1e2"` or a form field `1e2`: a number field refuses it,
 * and money fields answer INVALID_AMOUNT as for any malformed amount (decisions.md §6).
 */
function parseJson(text: string): unknown {
  // A JSON number has an exponent only after a digit; text with no digit before an `e` anywhere
  // (in strings too) has none, and a parse without the reviver is several times cheaper.
  if (!/[0-9][eE]/.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined && !PLAIN_DECIMAL.test(context.source) ? context.source : value);
}

function tooLarge(message: string): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', message);
}

/** PHP-style keys (`products[0][id]`, `products[]`, repeated keys) to nested values. */
function parseForm(pairs: string, limits: BodyLimits): Record<string, unknown> {
  try {
    return qs.parse(pairs, {
      depth: 5,
      arrayLimit: limits.maxFields,
      parameterLimit: limits.maxFields,
      throwOnLimitExceeded: true,
      allowPrototypes: false,
      duplicates: 'combine',
    }) as Record<string, unknown>;
  } catch (err) {
    throw tooLarge(`The body has too many fields (at most ${limits.maxFields}): ${(err as Error).message}`);
  }
}

/** Walks a parsed body: no string longer than the field limit, no more fields than allowed. */
function checkLimits(body: unknown, limits: BodyLimits): void {
  let fields = 0;
  const walk = (value: unknown, path: string): void => {
    if (typeof value === 'string') {
      fields++;
      if (Buffer.byteLength(value) > limits.fieldLimit) throw tooLarge(`Field "${path}" is longer than ${limits.fieldLimit} bytes.`);
    } else if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}[${k}]` : k);
    } else {
      fields++;
    }
    if (fields > limits.maxFields) throw tooLarge(`The body has more than ${limits.maxFields} fields.`);
  };
  walk(body, '');
}

/**
 * Bodies: multipart, urlencoded and JSON mean the same, PHP bracket keys included; empty bodies
 * are tolerated; sizes are capped with a 413, never truncated.
 */
export async function bodyParsing(app: FastifyInstance, limits: BodyLimits): Promise<void> {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, raw, done) => {
    const text = (raw as string).trim();
    if (text === '') return done(null, {});
    try {
      const body = parseJson(text);
      checkLimits(body, limits);
      done(null, body);
    } catch (err) {
      if (err instanceof DomainError) return done(err, undefined);
      done(new DomainError('VALIDATION_ERROR', 'The body is not valid JSON.'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, raw, done) => {
    try {
      const body = parseForm(raw as string, limits);
      checkLimits(body, limits);
      done(null, body);
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  const partLimits = { fieldSize: limits.fieldLimit, fields: limits.maxFields, files: limits.maxFields, parts: limits.maxFields, fieldNameSize: 200 };
  await app.register(multipart, {
    limits: { ...partLimits, fileSize: limits.fieldLimit },
    throwFileSizeLimit: true,
  });
  // Multipart fields are turned into the same `key=value` pairs a form would send, so the three
  // encodings share one parser and one set of rules.
  const readMultipart = async (request: FastifyRequest) => {
    const pairs: string[] = [];
    let bytes = 0;
    const upload = request.routeOptions.config?.fileUpload;
    // An upload route cuts files at its own limit instead of refusing the request, so the form
    // that sent one too big can say so beside its field.
    const parts = upload ? request.parts({ limits: { ...partLimits, fileSize: upload.maxBytes },
      throwFileSizeLimit: false } as FastifyMultipartBaseOptions) : request.parts();
    try {
      for await (const part of parts) {
        let value: string;
        if (part.type === 'file' && upload?.field === part.fieldname && !request.upload) {
          const chunks: Buffer[] = [];
          for await (const chunk of part.file) chunks.push(chunk as Buffer);
          request.upload = { filename: part.filename, data: Buffer.concat(chunks), tooLarge: part.file.truncated };
          continue;
        }
        if (part.type === 'file') {
          value = (await part.toBuffer()).toString('utf8');
          if (part.file.truncated) throw tooLarge(`File "${part.fieldname}" is longer than ${limits.fieldLimit} bytes.`);
        } else {
          if (part.valueTruncated) throw tooLarge(`Field "${part.fieldname}" is longer than ${limits.fieldLimit} bytes.`);
          value = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        }
        bytes += Buffer.byteLength(part.fieldname) + Buffer.byteLength(value);
        if (bytes > limits.bodyLimit) throw tooLarge(`The body is larger than ${limits.bodyLimit} bytes.`);
        pairs.push(`${encodeURIComponent(part.fieldname)}=${encodeURIComponent(value)}`);
      }
    } catch (err) {
      const e = err as { code?: string; statusCode?: number };
      if (err instanceof DomainError || e.code?.startsWith('FST_')) throw err;
      // busboy's own complaints (no boundary, cut-off parts) are the client's malformed body
      throw new DomainError('VALIDATION_ERROR', `The multipart body is malformed: ${(err as Error).message}`);
    }
    request.body = parseForm(pairs.join('&'), limits);
  };
  // A callback hook, not an async one: most requests are not multipart and pass at no cost.
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const bodiless = () => {
      if ((request.body === undefined || request.body === null)
        && (request.method === 'POST' || request.method === 'PATCH' || request.method === 'PUT')) request.body = {};
    };
    if (!request.isMultipart()) {
      bodiless();
      return done();
    }
    readMultipart(request).then(() => { bodiless(); done(); }, done);
  });
}

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
}

/** acceptedTypes by schema: the schemas are the routes' own and fixed, and every request asks again. */
const typesOf = new WeakMap<JsonSchema, Set<string> | undefined>();

/** The JSON types a schema accepts; undefined when it does not say (any value). */
function acceptedTypes(schema: JsonSchema): Set<string> | undefined {
  if (typesOf.has(schema)) return typesOf.get(schema);
  const types = typesIn(schema);
  typesOf.set(schema, types);
  return types;
}

function typesIn(schema: JsonSchema): Set<string> | undefined {
  if (schema.anyOf) {
    const all = new Set<string>();
    for (const branch of schema.anyOf) {
      const types = acceptedTypes(branch);
      if (!types) return undefined;
      for (const type of types) all.add(type);
    }
    return all;
  }
  if (schema.type === undefined) return undefined;
  return new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
}

/**
 * True when a branch other than a number takes this text as it is: a free string, one of a string
 * enum, or `true`/`false`. (A number branch of the same union would otherwise read `" "` as 0.)
 */
function textAccepted(schema: JsonSchema, text: string): boolean {
  return (schema.anyOf ?? [schema]).some((branch) => {
    const types = acceptedTypes(branch);
    if (types?.has('boolean') && (text === 'true' || text === 'false')) return true;
    if (!types?.has('string')) return false;
    if (branch.enum) return branch.enum.includes(text);
    return branch.const === undefined || branch.const === text;
  });
}

/** The property schemas of an object schema, when there is only one candidate. */
function propertySchemas(schema: JsonSchema): Record<string, JsonSchema> | undefined {
  if (schema.properties) return schema.properties;
  const parts = schema.allOf ?? schema.anyOf?.filter((b) => b.properties);
  if (!parts) return undefined;
  if (schema.allOf) return Object.assign({}, ...parts.map(propertySchemas).filter(Boolean));
  return parts.length === 1 ? parts[0]!.properties : undefined;
}

/**
 * The first value that validation would coerce into something it was not (issue 16): a boolean or
 * null into a number or string, a number written with a sign, hex, exponent or space, a list into
 * a single value. AJV's coercion does all of these; forms still need theirs (every field arrives
 * as text), so it stays on and this narrows it to plain decimal text.
 */
export function strictTypeProblem(schema: JsonSchema | undefined, value: unknown, path: string): string | undefined {
  if (value === undefined || schema === undefined || typeof schema !== 'object') return undefined;
  const types = acceptedTypes(schema);
  const field = path || 'the body';
  if (types) {
    const numeric = types.has('number') || types.has('integer');
    if (Array.isArray(value) && !types.has('array')) return `${field} must be a single value, not a list`;
    if (typeof value === 'boolean' && !types.has('boolean')) return `${field} must not be true or false`;
    if (value === null && !types.has('null')) return `${field} must not be null`;
    if (typeof value === 'string' && numeric && !(types.has('number') ? PLAIN_DECIMAL : PLAIN_INTEGER).test(value) && !textAccepted(schema, value)) {
      return `${field} must be a number written in plain digits`;
    }
    // A single value where a list is expected becomes a list of one (coerceTypes: 'array'): its item rules apply.
    if (!Array.isArray(value) && types.size === 1 && types.has('array')) return strictTypeProblem(schema.items, value, path);
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    for (const [i, v] of value.entries()) {
      const problem = strictTypeProblem(items, v, `${field}.${i}`);
      if (problem) return problem;
    }
  } else if (value !== null && typeof value === 'object') {
    const properties = propertySchemas(schema) ?? {};
    for (const [key, v] of Object.entries(value)) {
      const problem = strictTypeProblem(Object.hasOwn(properties, key) ? properties[key] : undefined, v, path ? `${path}.${key}` : key);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Strict types at the edge, the same for JSON, urlencoded and multipart bodies, query strings and
 * path parameters: runs before validation (and after the multipart fields are parsed, so it is
 * registered after bodyParsing).
 */
export function strictTypes(app: FastifyInstance): void {
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const schema = request.routeOptions.schema as Record<string, JsonSchema | undefined> | undefined;
    if (schema) {
      for (const [part, value] of [['params', request.params], ['querystring', request.query], ['body', request.body]] as const) {
        const problem = strictTypeProblem(schema[part], value, '');
        if (problem) return done(new DomainError('VALIDATION_ERROR', problem));
      }
    }
    done();
  });
}

/** The first value the database layer cannot carry, named like a validation error; undefined when none. */
function unstorable(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? `${path} must not contain a NUL character` : undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} must be a finite number`;
  if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      const problem = unstorable(v, path ? `${path}.${key}` : key);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Refuses, once validation has coerced them, values no column holds faithfully: a NUL character
 * (C-string tools and clients cut text short at it) and a non-finite number, which AJV lets
 * through: it coerces a 309-digit number to Infinity and skips minimum/maximum for it.
 */
export function inputGuard(app: FastifyInstance): void {
  app.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    for (const input of [request.params, request.query, request.body]) {
      const problem = unstorable(input, '');
      if (problem) return done(new DomainError('VALIDATION_ERROR', problem));
    }
    done();
  });
}

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

const UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'PROTOCOL_CONNECTION_LOST', 'ER_CON_COUNT_ERROR', 'ENOTFOUND', 'EHOSTUNREACH',
  'PROTOCOL_SEQUENCE_TIMEOUT']);
/**
 * A database that answers but cannot take writes for now — a full disk, a read-only file, an
 * I/O error, a lock held too long by another process — is unavailable too: the request changed
 * nothing, and the same request may succeed once the cause is gone.
 * SQLite: BUSY, NOMEM, READONLY, IOERR, FULL, CANTOPEN. MySQL: ER_DISK_FULL, ER_RECORD_FILE_FULL,
 * ER_OUT_OF_RESOURCES, ER_OPTION_PREVENTS_STATEMENT (read_only).
 */
const SQLITE_UNAVAILABLE = new Set([5, 7, 8, 10, 13, 14]);
const MYSQL_UNAVAILABLE = new Set([1021, 1114, 1041, 1290]);

/** True for errors that mean "the database cannot be reached", however deep the driver wrapped them. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown; name?: string; message?: string } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e,
    depth++) {
    if (e.code && UNAVAILABLE.has(e.code)) return true;
    const errno = (e as { errno?: number }).errno;
    if (SQLITE_UNAVAILABLE.has(sqliteCode(e) ?? -1)) return true;
    if (typeof errno === 'number' && MYSQL_UNAVAILABLE.has(errno)) return true;
    if (e.name === 'ConnectionException') return true;
    if (typeof e.message === 'string'
      && /connection (is in closed state|lost)|Pool is closed|Can't add new command when connection is in closed state/i.test(e.message)) return true;
  }
  return false;
}

interface ErrorLike {
  name?: string; message?: string; stack?: string; code?: unknown; errno?: unknown; sqlState?: unknown;
  errcode?: unknown; statusCode?: unknown; cause?: unknown; sql?: unknown; sqlMessage?: unknown;
}

/** Errors of the database drivers (mysql2, node:sqlite) and MikroORM's wrappers of them. */
function isDatabaseError(e: ErrorLike): boolean {
  return e.sql !== undefined || e.sqlMessage !== undefined || e.sqlState !== undefined || e.errcode !== undefined
    || (typeof e.code === 'string' && /^(ER_|ERR_SQLITE|SQLITE_)/.test(e.code))
    || (typeof e.name === 'string' && /(Driver|Constraint|Violation|Syntax|Lock|Deadlock|Connection|Table|Field|Database)\w*Exception$/.test(e.name));
}

/**
 * The log's `err` serializer. A database error's message, SQL text and driver fields carry
 * statement parameters and row values (a pending TOTP secret, token hashes, `Duplicate entry
 * '<value>'`), so only its class and error codes are logged, with the stack's frames but not its
 * first line (the message again). Other errors keep type, message, stack and code; causes are
 * serialized by the same rules. No other field is copied, so nothing unknown slips through.
 */
export function serializeError(err: unknown, depth = 0): { type: string; message: string; stack: string; [key: string]: unknown } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const database = isDatabaseError(e);
  const out = {
    type: e.name ?? typeof err,
    message: database ? `database error ${[e.code, e.errno, e.errcode].filter((v) => v !== undefined).join(' ')}`.trim() : String(e.message ?? err),
    stack: database ? (e.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line)).join('\n') : e.stack ?? '',
  } as { type: string; message: string; stack: string; [key: string]: unknown };
  for (const key of ['code', 'errno', 'sqlState', 'errcode', 'statusCode'] as const) {
    if (typeof e[key] === 'string' || typeof e[key] === 'number') out[key] = e[key];
  }
  if (e.cause !== undefined && depth < 5) out.cause = serializeError(e.cause, depth + 1);
  return out;
}

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
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ` +
    `${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
}

/**
 * The error body; on a route a real client calls, when that client is the caller, a code it
 * lacks becomes the nearest it knows, ours in `code`.
 */
function errorBody(reply: FastifyReply, code: string, message: string) {
  const client = reply.request.routeOptions.config?.clientErrors;
  if (client && !client.known.has(code) && readsClientCodes(reply.request)) return { status: false, error: client.nearest(code, message), message, code };
  return { status: false, error: code, message };
}

export function send(reply: FastifyReply, code: string, message: string): FastifyReply {
  return reply.code(errorStatus[code] ?? 400).send(errorBody(reply, code, message));
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
  // Refused before its body has arrived (no key, too large, ...): the socket closes with the
  // answer. Kept open, Node would read and drop the rest of the body, at whatever pace the client
  // chose to send it.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && !request.raw.complete) reply.header('connection', 'close');
    done(null, payload);
  });
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof DomainError) {
      const { retryAfterSeconds } = err as DomainError;
      if (retryAfterSeconds !== undefined) reply.header('Retry-After', String(retryAfterSeconds));
      return send(reply, err.code, err.message);
    }
    if (err.validation) return send(reply, 'VALIDATION_ERROR', validationMessage(err));
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) {
      if (known[0] === 'RATE_LIMITED') return send(reply, 'RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.');
      return send(reply, known[0], known[1] ?? err.message);
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
      return reply.code(status).send(errorBody(reply, status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR', err.message));
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
