/**
 * Idempotency keys for API callers (Stripe's semantics): a bot or a web front end that retries a
 * call that moves money, credits or items after a timeout sends the same `Idempotency-Key`, and
 * gets the first answer again instead of a second move. A route opts in with
 * `config: { idempotent: 'transaction' }` (or `'own-commit'`); without the header it runs as before,
 * with no database work of this module's.
 *
 * The database decides, so it holds across instances and through a crash:
 *   1. the key is claimed in a commit of its own (a row keyed by the API key and the
 *      Idempotency-Key, in progress, with a lease); a repeat finds the row and replays its answer,
 *      answers IDEMPOTENCY_KEY_REUSED (another request) or IDEMPOTENCY_IN_PROGRESS (still running);
 *   2. `transaction`: the handler runs inside one transaction (the service's own joins it) and its
 *      serialized answer is written to the row in that same transaction, only while the claim is
 *      still ours: the move and its answer commit together or not at all. `own-commit` (a handler
 *      that calls out, as a checkout at a gateway does, must not hold a transaction): the answer is
 *      written in a commit of its own just after the handler's (docs/idempotency.md says what a crash
 *      between the two leaves);
 *   3. a 4xx the handler raised changed nothing and is stored and replayed too; a 5xx releases the key.
 */
import { hash, randomBytes } from 'node:crypto';
import { Type, type TObject } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, RouteOptions } from 'fastify';
import { everyRound } from './background.ts';
import type { Database } from './db.ts';
import { isUniqueViolation } from './db/errors.ts';
import { DomainError, registerErrorCodes } from './errors.ts';
import { sql } from './sql.ts';
import { defineEntity, p } from './table.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route takes an `Idempotency-Key` header. `transaction`: its handler does nothing outside
     * the database, so it runs in one transaction that also records its answer. `own-commit`: it
     * calls out (a gateway), so its answer is recorded in a commit of its own after it.
     */
    idempotent?: 'transaction' | 'own-commit';
  }
}

export const CoreIdempotencyKey = defineEntity({
  name: 'CoreIdempotencyKey',
  tableName: 'core_idempotency_keys',
  properties: {
    /** A hash of the API key's name and the Idempotency-Key: one width, case-sensitive whatever the collation, no caller's key at rest. */
    id: p.string().length(64).primary(),
    /** A hash of the request the key was first used with (method, route, API key, parameters and body). */
    fingerprint: p.string().length(64),
    /** The claim holding the row: the answer is recorded only by the request that holds it. */
    token: p.string().length(32),
    /** 0 while the first request runs; then the HTTP status of its answer. */
    status: p.integer(),
    contentType: p.string().length(100).nullable(),
    body: p.text().columnType('mediumtext').nullable(),
    /** While in progress, when (ms since the epoch) a repeat may take over a claim whose holder died. */
    leaseUntil: p.bigint('number'),
    /** When the key may be used again (ms since the epoch); swept after. */
    expiresAt: p.bigint('number').index(),
  },
});

export interface IdempotencyOptions {
  ttlHours: number;
  leaseSeconds: number;
  sweepSeconds: number;
}

/** A stored answer, as sent the first time. */
interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** A key this request holds, until its answer is recorded or the key released. */
interface Claim {
  id: string;
  token: string;
  /** Recorded or released: nothing left for the onSend hook to do. */
  settled: boolean;
}

const K = CoreIdempotencyKey.c;
/** 1–255 printable ASCII characters (Stripe's limit). */
const KEY_PATTERN = '^[\\x20-\\x7E]{1,255}$';
const HEADER = 'idempotency-key';
const JSON_TYPE = 'application/json; charset=utf-8';

const reused = () =>
  new DomainError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with another request (route, parameters or body); use a new key for a new request.');
const inProgress = (message: string) => new DomainError('IDEMPOTENCY_IN_PROGRESS', message, { retryAfterSeconds: 1 });

/** JSON with object keys sorted, so a body's field order does not change its fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The request as the key is bound to it: method, route, API key, and what validation made of its parameters and body. */
function fingerprint(request: FastifyRequest): string {
  return hash('sha256', canonical([request.method, request.routeOptions.url, request.apiKey?.name ?? '', request.params, request.query, request.body]), 'hex');
}

export class IdempotencyStore {
  readonly #db: Database;
  readonly #ttlMs: number;
  readonly #leaseMs: number;

  constructor(db: Database, options: Pick<IdempotencyOptions, 'ttlHours' | 'leaseSeconds'>) {
    this.#db = db;
    this.#ttlMs = Math.round(options.ttlHours * 3_600_000);
    this.#leaseMs = options.leaseSeconds * 1000;
  }

  /**
   * Claims `key` for this request, in a commit of its own; or the stored answer to replay. A key
   * past its expiry, or held by a claim whose lease ran out (its holder died before its commit,
   * so nothing of it happened), is taken over by a conditional update: of two takers, one wins.
   */
  async claim(owner: string, key: string, print: string): Promise<Claim | { replay: Answer }> {
    const id = hash('sha256', `${owner}\n${key}`, 'hex');
    const token = randomBytes(16).toString('hex');
    for (let attempt = 0; attempt < 3; attempt++) {
      const at = Date.now();
      const fresh = { leaseUntil: at + this.#leaseMs, expiresAt: at + this.#ttlMs };
      try {
        await this.#db.run(sql`insert into ${CoreIdempotencyKey} (${K.id}, ${K.fingerprint}, ${K.token}, ${K.status}, ${K.leaseUntil}, ${K.expiresAt})
          values (${id}, ${print}, ${token}, 0, ${fresh.leaseUntil}, ${fresh.expiresAt})`);
        return { id, token, settled: false };
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const row = await CoreIdempotencyKey.find(this.#db, id);
      if (!row) continue;
      if (row.expiresAt > at) {
        if (row.fingerprint !== print) throw reused();
        if (row.status !== 0) return { replay: { status: row.status, contentType: row.contentType ?? JSON_TYPE, body: row.body ?? '' } };
        if (row.leaseUntil > at) throw inProgress('A request with this Idempotency-Key is still being carried out; retry after Retry-After.');
      }
      const { affectedRows } = await this.#db.run(sql`update ${CoreIdempotencyKey} set ${K.fingerprint} = ${print}, ${K.token} = ${token},
        ${K.status} = 0, ${K.contentType} = null, ${K.body} = null, ${K.leaseUntil} = ${fresh.leaseUntil}, ${K.expiresAt} = ${fresh.expiresAt}
        where ${K.id} = ${id} and ${K.token} = ${row.token} and ${K.status} = ${row.status}`);
      if (affectedRows > 0) return { id, token, settled: false };
    }
    throw inProgress('Other requests with this Idempotency-Key are racing for it; retry after Retry-After.');
  }

  /**
   * Records the answer, if the claim is still this request's. Inside the handler's transaction a
   * lost claim (taken over after its lease) throws, so the move rolls back: only one request's commit carries the key.
   */
  async record(claim: Claim, answer: Answer): Promise<boolean> {
    const { affectedRows } = await this.#db.run(sql`update ${CoreIdempotencyKey} set ${K.status} = ${answer.status},
      ${K.contentType} = ${answer.contentType}, ${K.body} = ${answer.body}, ${K.leaseUntil} = 0
      where ${K.id} = ${claim.id} and ${K.token} = ${claim.token} and ${K.status} = 0`);
    return affectedRows > 0;
  }

  /** Lets the key be used again: the request failed with nothing done. */
  async release(claim: Claim): Promise<void> {
    await this.#db.run(sql`delete from ${CoreIdempotencyKey} where ${K.id} = ${claim.id} and ${K.token} = ${claim.token} and ${K.status} = 0`);
  }

  /** Deletes the keys past their expiry. */
  async sweep(at = Date.now()): Promise<void> {
    await this.#db.run(sql`delete from ${CoreIdempotencyKey} where ${K.expiresAt} <= ${at}`);
  }
}

type Handler = (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) => unknown;

/**
 * Runs the handler with `reply.send` held back: what it sends (or returns) is the payload, sent by
 * the caller once the answer is recorded. A handler may set the status (`reply.code(201)`) as usual.
 */
function captured(handler: Handler, app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const own = reply as { send: (payload?: unknown) => FastifyReply };
  return new Promise<unknown>((resolve, reject) => {
    own.send = (payload) => {
      resolve(payload);
      return reply;
    };
    // A handler that sent returns the reply, which is thenable and settles only once the answer is
    // out: its send, above, has settled this promise by then.
    (async () => handler.call(app, request, reply))().then(resolve, reject);
  }).finally(() => {
    delete (own as Partial<typeof own>).send;
  });
}

/** The answer as Fastify would send it: the route's serializer for the status set. */
function answerOf(reply: FastifyReply, payload: unknown): Answer {
  const type = reply.getHeader('content-type');
  return { status: reply.statusCode, contentType: typeof type === 'string' ? type : JSON_TYPE, body: String(reply.serialize(payload)) };
}

function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  return reply.code(answer.status).header('content-type', answer.contentType).send(answer.body);
}

const IDEMPOTENCY_HEADER = Type.String({
  pattern: KEY_PATTERN,
  description:
    'Makes a retry safe: a repeat with the same key and request answers the first answer again (with `Idempotent-Replayed: true`) and ' +
    'moves nothing twice. 1–255 printable ASCII characters, e.g. a UUID; keys are per API key and kept 24 hours (docs/idempotency.md).',
  examples: ['5f0c7a52-8e3d-4c1b-9a47-2d6f1e0b8c93'],
});

/**
 * Makes every route with `config.idempotent` take the header: documented and validated by its
 * schema, its handler wrapped, its errors recorded or the key released as it answers. Keys past
 * their expiry are swept every `sweepSeconds`.
 */
export function idempotencyKeys(app: FastifyInstance, db: Database, options: IdempotencyOptions): IdempotencyStore {
  registerErrorCodes({ IDEMPOTENCY_KEY_REUSED: 422, IDEMPOTENCY_IN_PROGRESS: 409 });
  const store = new IdempotencyStore(db, options);
  const claims = new WeakMap<FastifyRequest, Claim>();
  everyRound(app, app.log, 'idempotency key sweep', options.sweepSeconds * 1000, () => store.sweep());

  /**
   * The error answers: a 4xx the handler raised is the key's answer (nothing changed); after a 5xx
   * the key may be tried again. A request without a key (nearly all) passes on at once, with no promise.
   */
  const settleError: onSendHookHandler = (request, reply, payload, done) => {
    const claim = claims.get(request);
    if (!claim || claim.settled) return done(null, payload);
    claim.settled = true;
    const type = reply.getHeader('content-type');
    const settled =
      reply.statusCode >= 400 && reply.statusCode < 500 && typeof payload === 'string'
        ? store.record(claim, { status: reply.statusCode, contentType: typeof type === 'string' ? type : JSON_TYPE, body: payload })
        : store.release(claim);
    settled.then(
      () => done(null, payload),
      (err: unknown) => {
        // The answer goes out regardless; the key stays in progress until its lease ends.
        request.log.warn({ err }, 'idempotency key left in progress');
        done(null, payload);
      },
    );
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    const mode = route.config?.idempotent;
    if (!mode) return;
    const schema = route.schema ?? {};
    const headers = schema.headers as TObject | undefined;
    schema.headers = Type.Object({ ...headers?.properties, [HEADER]: Type.Optional(IDEMPOTENCY_HEADER) });
    schema.errors = [...(schema.errors ?? []), 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_IN_PROGRESS'];
    route.schema = schema;
    route.onSend = [...[route.onSend ?? []].flat(), settleError];
    const handler = route.handler as Handler;

    const keyed = async (app: FastifyInstance, key: string, request: FastifyRequest, reply: FastifyReply) => {
      const claim = await store.claim(request.apiKey?.name ?? '', key, fingerprint(request));
      if ('replay' in claim) return sendAnswer(reply.header('idempotent-replayed', 'true'), claim.replay);
      claims.set(request, claim);
      let answer: Answer;
      if (mode === 'transaction') {
        answer = await db.transaction(async () => {
          const made = answerOf(reply, await captured(handler, app, request, reply));
          if (!(await store.record(claim, made))) {
            claim.settled = true;
            throw inProgress('This request outlived its hold on the Idempotency-Key and another took it over; nothing of this one was done.');
          }
          return made;
        });
      } else {
        answer = answerOf(reply, await captured(handler, app, request, reply));
        // What the handler did is done: its answer goes out even if it cannot be kept.
        const kept = await store.record(claim, answer).catch((err: unknown) => {
          request.log.warn({ err }, 'idempotency key left in progress');
          return true;
        });
        if (!kept) request.log.warn('idempotency key taken over while its first request ran');
      }
      claim.settled = true;
      return sendAnswer(reply, answer);
    };
    // A request without a key goes to the route's own handler, with no promise of the wrapper's around it.
    route.handler = function idempotent(this: FastifyInstance, request, reply) {
      const key = request.headers[HEADER];
      return typeof key === 'string' ? keyed(this, key, request, reply) : handler.call(this, request, reply);
    };
  });
  return store;
}
