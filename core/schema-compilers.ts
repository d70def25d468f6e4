/**
 * Fastify's own schema compilers (AJV for input, fast-json-stringify for responses), made lazy:
 * a route's validators and serializers are compiled on its first request instead of at start.
 * A server has a few hundred routes and a game server calls a dozen of them, so compiling all at
 * start cost most of a second and tens of megabytes of generated code nobody runs. Serializers
 * are also shared by schema: every route answers its errors with the same ErrorResponse.
 */
import type { FastifyInstance, FastifyReply, FastifyServerOptions, onSendHookHandler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = ReturnType<typeof AjvCompiler>;
type BuildSerializer = ReturnType<typeof SerializerSelector>;
type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type Serialize = (data: unknown) => string;

export function lazySchemaCompilers(): CompilersFactory {
  const validators = AjvCompiler();
  const serializers = SerializerSelector();
  // AJV's function types promise more than Fastify uses (a call, then `errors`), hence the casts.
  return {
    buildValidator: ((externalSchemas: Parameters<BuildValidator>[0], options: Parameters<BuildValidator>[1]) => {
      const compile = validators(externalSchemas, options);
      return (route: Parameters<ReturnType<BuildValidator>>[0]) => {
        let real: Validate | undefined;
        // Fastify reads `errors` off the function it was given, after a failed call.
        const validate: Validate = (data) => {
          real ??= compile(route) as Validate;
          const valid = real(data);
          validate.errors = real.errors;
          return valid;
        };
        return validate;
      };
    }) as unknown as BuildValidator,
    buildSerializer: ((externalSchemas: Parameters<BuildSerializer>[0], options: Parameters<BuildSerializer>[1]) => {
      const compile = serializers(externalSchemas, options);
      const bySchema = new WeakMap<object, Serialize>();
      return (route: Parameters<ReturnType<BuildSerializer>>[0]) => {
        const schema = route.schema as object;
        let serialize = bySchema.get(schema);
        if (!serialize) {
          let real: Serialize | undefined;
          serialize = (data) => (real ??= compile(route) as Serialize)(data);
          bySchema.set(schema, serialize);
        }
        return serialize;
      };
    }) as BuildSerializer,
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route answers with JSON.stringify instead of its response schema's compiled serializer
     * (see plainJsonAnswers). Only for routes whose answers are built whole by typed formatters.
     */
    plainJson?: boolean;
  }
}

/**
 * Routes marked `config: { plainJson: true }` answer with JSON.stringify. They are the big lists
 * game servers poll (the store's listing, a server's command queue, the ticket list).
 * fast-json-stringify builds its output by concatenation, which for a big list is much of what a
 * request allocates and the collector's work with it; V8's own JSON.stringify writes one flat
 * string (figures: docs/performance.md). Such a route may also answer JSON text it built itself
 * (`sendJsonText`), which goes out as it is.
 *
 * What the compiled serializer also did, leaving out properties the schema does not name and
 * coercing types, is then up to the route's formatters. With `check` (tests), every 2xx answer of
 * such a route is read back and serialized by its schema, and a difference is a fault, so each
 * test that calls the route proves the plain answer is the one the schema would give.
 */
export function plainJsonAnswers(app: FastifyInstance, check: boolean): void {
  app.addHook('onRoute', (route) => {
    if (!route.config?.plainJson) return;
    route.serializerCompiler = () => (data: unknown) => JSON.stringify(data);
    if (!check) return;
    const responses = (route.schema?.response ?? {}) as Record<string, Parameters<typeof fastJson>[0]>;
    const compiled = new Map<Parameters<typeof fastJson>[0], Serialize>();
    const checkAnswer: onSendHookHandler = (_request, reply, payload, done) => {
      const status = String(reply.statusCode);
      const schema = status.startsWith('2') ? (responses[status] ?? responses['2xx']) : undefined;
      const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
      if (schema === undefined || text === undefined) return done(null, payload);
      let serialize = compiled.get(schema);
      if (!serialize) compiled.set(schema, (serialize = fastJson(schema, { schema: app.getSchemas() as Record<string, typeof schema> })));
      const expected = serialize(JSON.parse(text));
      if (text !== expected)
        return done(new Error(`${route.method} ${route.url}: the plain answer differs from the schema's: ${firstDifference(text, expected)}`));
      done(null, payload);
    };
    route.onSend = [...[route.onSend ?? []].flat(), checkAnswer];
  });
}

/**
 * JSON text of a `T`, built by a plainJson route itself: a string, or its UTF-8 bytes when the route
 * assembles a big answer from parts it keeps encoded (the socket then writes them as they are).
 */
export type JsonText<T> = (string | Buffer) & { readonly [jsonOf]?: T };
declare const jsonOf: unique symbol;

/** Answers JSON text a plainJson route built (Fastify serializes only what is neither a string nor a Buffer). */
export function sendJsonText<T>(reply: FastifyReply, text: JsonText<T>): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(text);
}

/** Where two answers part, with a little context, for the failure message. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `plain …${a.slice(Math.max(0, i - 60), i + 60)}… schema …${b.slice(Math.max(0, i - 60), i + 60)}…`;
}
