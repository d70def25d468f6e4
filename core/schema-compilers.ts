/**
 * Fastify's own schema compilers (AJV for input, fast-json-stringify for responses), made lazy:
 * a route's validators and serializers are compiled on its first request instead of at start.
 * A server has a few hundred routes and a game server calls a dozen of them, so compiling all at
 * start cost most of a second and tens of megabytes of generated code nobody runs. Serializers
 * are also shared by schema: every route answers its errors with the same ErrorResponse.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
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
 * string (figures: docs/performance.md).
 *
 * What the compiled serializer also did, leaving out properties the schema does not name and
 * coercing types, is then up to the route's formatters. With `check` (tests), every 2xx answer of
 * such a route is serialized both ways and a difference is a fault, so each test that calls the
 * route proves the plain answer is the one the schema would give.
 */
export function plainJsonAnswers(app: FastifyInstance, check: boolean): void {
  app.addHook('onRoute', (route) => {
    if (!route.config?.plainJson) return;
    route.serializerCompiler = ({ schema, httpStatus }) => {
      if (!check || !httpStatus?.startsWith('2')) return (data: unknown) => JSON.stringify(data);
      let compiled: Serialize | undefined;
      return (data: unknown) => {
        const plain = JSON.stringify(data);
        compiled ??= fastJson(schema as Parameters<typeof fastJson>[0], { schema: app.getSchemas() as Record<string, Parameters<typeof fastJson>[0]> });
        const expected = compiled(data);
        if (plain !== expected)
          throw new Error(`${route.method} ${route.url}: the plain answer differs from the schema's: ` + `${firstDifference(plain, expected)}`);
        return plain;
      };
    };
  });
}

/** Where two answers part, with a little context, for the failure message. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `plain …${a.slice(Math.max(0, i - 60), i + 60)}… schema …${b.slice(Math.max(0, i - 60), i + 60)}…`;
}
