/**
 * What operators and browser front ends need around every request: request ids that tie a
 * client's report to the log, CORS for front ends on other origins, and Prometheus metrics.
 */
import { randomBytes } from 'node:crypto';
import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilent } from 'pino';
import cors from '@fastify/cors';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AppConfig } from './config.ts';
import type { Database } from './db.ts';
import type { ApiKeyIdentity, ApiKeys } from './api-keys.ts';
import { send } from './http/error-answers.ts';

/** A client's own id is kept when it is short and plain enough to log and echo back safely. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Ids this process makes: a random prefix of its own, so they stay unique across restarts and
 * instances, then a count; cheaper than a UUID per request (docs/performance.md).
 */
const ID_PREFIX = `${randomBytes(6).toString('hex')}-`;
let made = 0;

/** Fastify's `genReqId`: the client's `X-Request-Id`, else a fresh id. */
export function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : ID_PREFIX + (++made).toString(36);
}

/**
 * Per-request log lines: a request that failed (4xx, 5xx) is logged at info, with its status and
 * time; a successful one only at debug. A game server makes thousands of successful calls a
 * minute, which at info would be most of the log and a good part of each request's cost; the
 * reverse proxy in front (docs/examples/nginx.conf) keeps the access log.
 *
 * Fastify is given no logger of its own: with one, it hangs two listeners on every response and
 * reads the clock twice for that line, whether or not it is written (docs/performance.md). The
 * host's pino is `app.log`, each request's logger is made from it (`requestLoggers`), and the
 * line is written as the answer is sent (`completionLog`).
 */
export class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  /** Called only while an onResponse hook (metrics) makes Fastify listen for the end; `completionLog` has written the line. */
  override requestCompleted(): void {
    /* written at send */
  }
}

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
/** The host's logger: pino, which can tell whether a level would log. */
export type Pino = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

/**
 * A request's logger, its pino child made only when the request logs something. Making one for
 * every request (its request id rendered through the redaction rules) cost more than the rest of
 * the logging: most requests log nothing at the default level.
 */
class RequestLogger implements FastifyBaseLogger {
  /** When routing gave the request this logger: the start of its time in the completion line. */
  readonly startedAt = performance.now();
  readonly #parent: Pino;
  readonly #bindings: Bindings;
  /** What decides the level: the parent, or the child when the route sets options of its own. */
  readonly #levels: Pino;
  #child?: FastifyBaseLogger;

  constructor(parent: Pino, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#levels = hasKeys(options) ? (this.#child = parent.child(bindings, options) as Pino) : parent;
  }

  get #logger(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  isLevelEnabled(level: string): boolean {
    return this.#levels.isLevelEnabled(level);
  }

  #log(level: LogMethod, args: unknown[]): void {
    if (this.#levels.isLevelEnabled(level)) (this.#logger[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): LevelWithSilent | string {
    return this.#levels.level;
  }
  set level(level: string) {
    this.#logger.level = level;
  }
  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {
    /* nothing, at any level */
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
}

function hasKeys(options: object): boolean {
  for (const _ in options) return true;
  return false;
}

/** Fastify's `childLoggerFactory`: each request's logger, a lazy child of the host's pino `root`. */
export function requestLoggers(root: Pino) {
  return (_silent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger => new RequestLogger(root, bindings, options);
}

/** The request's line, written as its answer is sent: at info when it failed, else at debug. */
export function completionLog(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const log = reply.log as RequestLogger;
    const level = reply.statusCode >= 400 ? 'info' : 'debug';
    if (log.isLevelEnabled(level)) log[level]({ req: request, res: reply, responseTime: performance.now() - log.startedAt }, 'request completed');
    done(null, payload);
  });
}

export async function corsPolicy(app: FastifyInstance, origins: string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Content-Type', 'X-Api-Key', 'X-Request-Id', 'Authorization'],
    exposedHeaders: ['X-Request-Id', 'Retry-After'],
    maxAge: 600,
  });
}

/**
 * The metrics registry of one server. Features add their own business metrics to it (through
 * their context) next to the HTTP, process and event-loop ones registered here.
 */
export function metricsRegistry(enabled: boolean): Registry {
  const registry = new Registry();
  // Process, heap, GC and event-loop lag; nothing to collect when nobody scrapes.
  if (enabled) collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * The database pool at scrape time: connections in use and idle, and callers waiting for one
 * (MySQL/MariaDB: the pool's queue; SQLite: statements and transactions waiting for the one that
 * holds its single connection). Waiting callers that stay above zero mean the pool is too small
 * or a transaction is too slow.
 */
export function databaseMetrics(registry: Registry, db: Database): void {
  new Gauge({
    name: 'db_pool_connections',
    help: 'Database connections by state (in_use, idle).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { inUse, idle } = db.poolStats();
      this.set({ state: 'in_use' }, inUse);
      this.set({ state: 'idle' }, idle);
    },
  });
  new Gauge({
    name: 'db_pool_waiting',
    help: 'Statements and transactions waiting for a database connection.',
    registers: [registry],
    collect() {
      this.set(db.poolStats().waiting);
    },
  });
  const wal = db.walFsyncs();
  if (wal) {
    // SQLite on a file: a disk whose fsyncs slow (the average past 0.5 ms) moves them to their thread.
    new Gauge({
      name: 'db_wal_fsync_average_seconds',
      help: "The recent average of the write-ahead log's fsyncs after a commit (SQLite on a file).",
      registers: [registry],
      collect() {
        this.set(wal.averageMs / 1000);
      },
    });
    new Gauge({
      name: 'db_wal_fsync_on_thread',
      help: "1 while the log's fsyncs run on a thread of their own (a slow disk), 0 while on the event loop.",
      registers: [registry],
      collect() {
        this.set(wal.place === 'thread' ? 1 : 0);
      },
    });
  }
  // A gauge read from the database's own count at scrape time: rate() reads it as a counter.
  new Gauge({
    name: 'db_transaction_retries_total',
    help: 'Transactions run again: lost to another (a deadlock; a certification conflict on Galera), or their ' + 'connection before the commit.',
    registers: [registry],
    collect() {
      this.set(db.retries);
    },
  });
}

/** Request rate and latency by route and status, and `GET /metrics` for Prometheus. */
export function metricsRoutes(app: FastifyInstance, registry: Registry, config: AppConfig['metrics'], keys: ApiKeys): void {
  const requests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status: count, rate and latency.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL: ids in paths would make one series per player.
    const route = request.routeOptions.url ?? 'unmatched';
    requests.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics (an admin key in X-Api-Key or Authorization: Bearer, unless metrics.public)',
        security: [],
        // Not under /api, so the key check below is its own: its two codes are listed here.
        errors: config.public ? [] : ['INVALID_API_KEY', 'FORBIDDEN'],
      },
    },
    async (request, reply) => {
      if (!config.public) {
        const identity = await presentedKey(request, keys);
        if (!identity) return send(reply, 'INVALID_API_KEY', 'GET /metrics needs an API key with the admin scope (X-Api-Key or Authorization: Bearer).');
        if (!identity.scopes.includes('admin')) return send(reply, 'FORBIDDEN', 'This API key lacks the admin scope.');
      }
      reply.header('Content-Type', registry.contentType);
      return registry.metrics();
    },
  );
}

function presentedKey(request: FastifyRequest, keys: ApiKeys): Promise<ApiKeyIdentity | undefined> {
  const header = request.headers['x-api-key'];
  const presented = typeof header === 'string' ? header : /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  return presented ? keys.check(presented) : Promise.resolve(undefined);
}
