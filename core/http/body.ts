/** Request bodies: multipart, urlencoded and JSON parsed alike, within the body limits. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart, { type FastifyMultipartBaseOptions } from '@fastify/multipart';
import qs from 'qs';
import { DomainError } from '../errors.ts';
import type { Step } from './stages.ts';
import { PLAIN_DECIMAL } from './strict-types.ts';

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

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Set by the host when the route's body schema allows more fields than the default limit: this
     * many are taken, as long as those under names the schema does not know stay within the default.
     */
    bodyFields?: { max: number; known: ReadonlySet<string> };
  }
}

/**
 * The most fields a body the schema accepts can hold, or undefined when it sets no bound (an array
 * without maxItems, an open record). Each string, number or boolean is one field, as checkLimits counts.
 */
export function schemaFields(schema: unknown): number | undefined {
  const s = schema as { type?: string; properties?: Record<string, unknown>; items?: unknown; maxItems?: number; anyOf?: unknown[]; oneOf?: unknown[] };
  if (s === null || typeof s !== 'object') return undefined;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) {
    const each = alternatives.map(schemaFields);
    return each.includes(undefined) ? undefined : Math.max(...(each as number[]));
  }
  if (s.type === 'array') {
    const item = schemaFields(s.items);
    return s.maxItems === undefined || item === undefined ? undefined : s.maxItems * item;
  }
  if (s.type === 'object' || s.properties) {
    let total = 0;
    for (const property of Object.values(s.properties ?? {})) {
      const n = schemaFields(property);
      if (n === undefined) return undefined;
      total += n;
    }
    return total;
  }
  return 1;
}

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
    typeof value === 'number' && context?.source !== undefined && !PLAIN_DECIMAL.test(context.source) ? context.source : value,
  );
}

function tooLarge(message: string): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', message);
}

/** PHP-style keys (`products[0][id]`, `products[]`, repeated keys) to nested values. */
function parseForm(pairs: string, maxFields: number): Record<string, unknown> {
  try {
    return qs.parse(pairs, {
      depth: 5,
      arrayLimit: maxFields,
      parameterLimit: maxFields,
      throwOnLimitExceeded: true,
      allowPrototypes: false,
      duplicates: 'combine',
    }) as Record<string, unknown>;
  } catch (err) {
    throw tooLarge(`The body has too many fields (at most ${maxFields}): ${(err as Error).message}`);
  }
}

/** The most fields `request`'s route takes: its schema's bound where that is above the default. */
const maxFieldsOf = (request: FastifyRequest, limits: BodyLimits) => request.routeOptions.config.bodyFields?.max ?? limits.maxFields;

/** How many fields a parsed value holds, as checkLimits counts them. */
function fieldCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + fieldCount(v), 0);
  if (value !== null && typeof value === 'object') return Object.values(value).reduce((n: number, v) => n + fieldCount(v), 0);
  return 1;
}

/** The most fields this body may have: the route's bound, unless its fields under names the schema does not know pass the default. */
function allowedFields(body: unknown, limits: BodyLimits, request: FastifyRequest): number {
  const route = request.routeOptions.config.bodyFields;
  if (!route || body === null || typeof body !== 'object') return limits.maxFields;
  const unknown = Object.entries(body).reduce((n, [name, value]) => (route.known.has(name) ? n : n + fieldCount(value)), 0);
  return unknown > limits.maxFields ? limits.maxFields : route.max;
}

/** Walks a parsed body: no string longer than the field limit, no more fields than its route allows. */
function checkLimits(body: unknown, limits: BodyLimits, request: FastifyRequest): void {
  let fields = 0;
  // The route's own bound is looked up only past the default, which nearly every body stays under.
  let maxFields = limits.maxFields;
  let routeChecked = false;
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
    if (fields > maxFields && !routeChecked) {
      routeChecked = true;
      maxFields = allowedFields(body, limits, request);
    }
    if (fields > maxFields) throw tooLarge(`The body has more than ${maxFields} fields.`);
  };
  walk(body, '');
}

/**
 * Bodies: multipart, urlencoded and JSON mean the same, PHP bracket keys included; empty bodies
 * are tolerated; sizes are capped with a 413, never truncated. Returns the step of the host's
 * preValidation hook (core/http/stages.ts) that reads multipart bodies and gives bodiless writes `{}`.
 */
export async function bodyParsing(app: FastifyInstance, limits: BodyLimits): Promise<Step> {
  // A route whose schema takes more (the game plugin's validate lists up to 500 ids) is not cut at the default.
  app.addHook('onRoute', (route) => {
    const body = route.schema?.body as { properties?: Record<string, unknown> } | undefined;
    const max = schemaFields(body);
    if (max !== undefined && max > limits.maxFields) {
      route.config = { ...route.config, bodyFields: { max, known: new Set(Object.keys(body?.properties ?? {})) } };
    }
  });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, done) => {
    const text = (raw as string).trim();
    if (text === '') return done(null, {});
    try {
      const body = parseJson(text);
      checkLimits(body, limits, request);
      done(null, body);
    } catch (err) {
      if (err instanceof DomainError) return done(err, undefined);
      done(new DomainError('VALIDATION_ERROR', 'The body is not valid JSON.'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, raw, done) => {
    try {
      const body = parseForm(raw as string, maxFieldsOf(request, limits));
      checkLimits(body, limits, request);
      done(null, body);
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  const partLimits = { fieldSize: limits.fieldLimit, fields: limits.maxFields, files: limits.maxFields, parts: limits.maxFields, fieldNameSize: 200 };
  // The plugin's onRequest and onResponse hooks only clean up files saveRequestFiles wrote to
  // disk, which no route here calls (parts are read into memory): left in, every request paid two
  // async hooks and a socket listener for them.
  const addHook = app.addHook;
  app.addHook = function (this: FastifyInstance, name: string, ...rest: unknown[]) {
    return name === 'onRequest' || name === 'onResponse' ? this : Reflect.apply(addHook, this, [name, ...rest]);
  } as typeof app.addHook;
  try {
    await app.register(multipart, {
      limits: { ...partLimits, fileSize: limits.fieldLimit },
      throwFileSizeLimit: true,
    });
  } finally {
    app.addHook = addHook;
  }
  // Multipart fields are turned into the same `key=value` pairs a form would send, so the three
  // encodings share one parser and one set of rules.
  const readMultipart = async (request: FastifyRequest) => {
    const pairs: string[] = [];
    let bytes = 0;
    const { fileUpload: upload, bodyFields: route } = request.routeOptions.config;
    const bodyFields = route?.max;
    const fields = bodyFields ? { fields: bodyFields, parts: bodyFields } : {};
    // An upload route cuts files at its own limit instead of refusing the request, so the form
    // that sent one too big can say so beside its field.
    const parts = upload
      ? request.parts({ limits: { ...partLimits, ...fields, fileSize: upload.maxBytes }, throwFileSizeLimit: false } as FastifyMultipartBaseOptions)
      : request.parts(bodyFields ? { limits: { ...partLimits, ...fields, fileSize: limits.fieldLimit } } : undefined);
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
    request.body = parseForm(pairs.join('&'), bodyFields ?? limits.maxFields);
    // busboy counted every part against the route's bound: names the schema does not know keep the default.
    if (bodyFields) checkLimits(request.body, limits, request);
  };
  // Called back, not awaited: most requests are not multipart and pass at no cost.
  return (request, done) => {
    const bodiless = () => {
      if ((request.body === undefined || request.body === null) && (request.method === 'POST' || request.method === 'PATCH' || request.method === 'PUT'))
        request.body = {};
    };
    if (!request.isMultipart()) {
      bodiless();
      return done();
    }
    readMultipart(request).then(() => {
      bodiless();
      done();
    }, done);
  };
}
