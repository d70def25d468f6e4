/**
 * The host's checks on every request, one hook per stage: Fastify pays for each hook it runs on
 * every request, so the checks share one instead of taking one each (docs/performance.md).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DomainError } from '../errors.ts';

/** A step of a stage: calls `done` once, with the error that ends the request or without. */
export type Step = (request: FastifyRequest, done: (err?: Error) => void) => void;
/** A synchronous step: the error that ends the request, or undefined. */
type Check = (request: FastifyRequest) => DomainError | undefined;

export interface Stages {
  /** Before routing's results are used: the key check (after CORS, which answers preflights). */
  onRequest: Step;
  /** Once the body is parsed: the multipart fields read, then the checks that need them. */
  preValidation: { read: Step; check: Check };
  /** Once validation has coerced the input: what no column holds, then who acts. */
  preHandler: { check: Check; run: Step };
}

export function requestStages(app: FastifyInstance, stages: Stages): void {
  app.addHook('onRequest', (request, reply, done) => {
    // Every response carries the id it was logged under.
    reply.header('X-Request-Id', request.id);
    stages.onRequest(request, done);
  });
  const { read, check: typesCheck } = stages.preValidation;
  app.addHook('preValidation', (request, _reply, done) => {
    read(request, (err) => done(err ?? typesCheck(request)));
  });
  const { check: inputCheck, run } = stages.preHandler;
  app.addHook('preHandler', (request, _reply, done) => {
    const err = inputCheck(request);
    if (err) return done(err);
    run(request, done);
  });
}
