/**
 * Fastify's own schema compilers (AJV for input, fast-json-stringify for responses), made lazy:
 * a route's validators and serializers are compiled on its first request instead of at start.
 * A server has a few hundred routes and a game server calls a dozen of them, so compiling all at
 * start cost most of a second and tens of megabytes of generated code nobody runs. Serializers
 * are also shared by schema: every route answers its errors with the same ErrorResponse.
 */
import type { FastifyServerOptions } from 'fastify';
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
