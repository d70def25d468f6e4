import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { lazySchemaCompilers, plainJsonAnswers } from './schema-compilers.ts';
import { Type } from '@sinclair/typebox';
import { ApiKeys, apiKeyCheck, apiKeysRef } from './api-keys.ts';
import { AuditLog, actAsStaff, auditRef } from './audit.ts';
import { auditRoutes } from './audit-routes.ts';
import { openFeaturesDatabase } from './boot.ts';
import { installClock, type Clock } from './clock.ts';
import { capConnections } from './connections.ts';
import { loadConfig, type AppConfig, type SiteSetting, type SiteSettings } from './config.ts';
import type { Database } from './db/database.ts';
import { migrate } from './db/migrations.ts';
import { registerErrorCodes } from './errors.ts';
import { EventBus } from './events.ts';
import { discoverFeatures } from './discover.ts';
import type { FeatureContext } from './feature-context.ts';
import { registerFeatures, selectEnabled, settingOwners, type LoadedFeature } from './features.ts';
import { bodyParsing } from './http/body.ts';
import { clientError, errorHandling, routerErrors, send } from './http/error-answers.ts';
import { serializeError } from './http/error-log.ts';
import { requestStages } from './http/stages.ts';
import { idempotencyKeys } from './idempotency.ts';
import { strictTypesError, unstorableError } from './http/strict-types.ts';
import {
  RequestLog,
  completionLog,
  corsPolicy,
  databaseMetrics,
  metricsRegistry,
  metricsRoutes,
  requestId,
  requestLoggers,
  type Pino,
} from './observability.ts';
import { checkDeclaredErrors, openapiOptions } from './openapi.ts';
import { OutboundPolicy } from './outbound.ts';
import { ServiceRegistry } from './registry.ts';
import { rateLimitStore } from './rate-limits.ts';
import { markServer } from './server-mark.ts';
import { DbSettings, declareSettings, settingsRef, settingsRoutes, siteDefaults, type SettingsService } from './settings.ts';

const FAVICON = readFileSync(new URL('assets/favicon.svg', import.meta.url));

declare module 'fastify' {
  interface FastifyInstance {
    appConfig: AppConfig;
    services: ServiceRegistry;
    events: EventBus;
    db: Database;
    settings: SettingsService;
    apiKeys: ApiKeys;
    /** The names of the features this server runs. */
    features: string[];
    featureContext(name: string): FeatureContext<unknown>;
  }
}

export interface BuildOptions {
  /** Environment to read (defaults to process.env). */
  env?: NodeJS.ProcessEnv;
  /** Settings laid over the config files and environment (tests use this). */
  config?: unknown;
  /** false: nothing is logged. */
  logger?: false;
  /** Where the host's own logger writes (default stdout); tests read the log from it. */
  logStream?: { write(line: string): void };
  /** Where boot messages go before the logger exists (default stderr). */
  bootLog?: (line: string) => void;
  /**
   * Checks the server makes of its own answers, for tests: an error answer the route's OpenAPI
   * document does not list becomes a 500, and so does a plain-JSON answer that differs from what
   * its schema's serializer would write.
   */
  selfChecks?: boolean;
  /** The clock time-bound code reads (tests move one forward); the system's when omitted. Installed until the app closes. */
  clock?: Clock;
  /** Runs on the opened database before its migrations: tests fill a fresh one from a migrated template (core/testing-template.ts). */
  beforeMigrate?: (db: Database) => Promise<void>;
}

/** Log redaction: never secrets, passwords, tokens or keys. */
const redact = ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', '*.password', '*.token', '*.secret', '*.apiKey'];

/**
 * Some secrets travel in URLs (api.md puts session tokens in `/api/auth/sessions/<token>`, the
 * game plugin its delivery token in the path or query). Every credential the server issues is 32
 * or more characters of hex, base64url or base32 (API keys, session and pending two-factor tokens,
 * console sessions, delivery tokens, TOTP secrets), so any such run is masked before a URL is
 * logged; a dashed UUID (a player's) is no secret and stays readable.
 */
const TOKEN_LIKE = /[A-Za-z0-9_-]{32,}/g;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function logSafeUrl(url: string): string {
  return url.replace(TOKEN_LIKE, (run) => (UUID.test(run) ? run : '[redacted]'));
}

const serializers = {
  err: serializeError,
  req(request: FastifyRequest) {
    return { method: request.method, url: logSafeUrl(request.url), host: request.host, remoteAddress: request.ip };
  },
  res(reply: FastifyReply) {
    return { statusCode: reply.statusCode };
  },
};

/** The host's pino: readable lines for a person at a terminal; JSON for everything that collects logs. */
function hostLogger(config: AppConfig, stream: BuildOptions['logStream']): Pino {
  const options = { level: config.log.level, redact, serializers };
  if (stream) return pino(options, stream);
  if (!process.stdout.isTTY) return pino(options);
  return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:yyyy-mm-dd HH:MM:ss', ignore: 'pid,hostname' } } });
}

/**
 * Builds the server: config, database and migrations for the enabled features, then the HTTP
 * conventions, then each feature. Nothing listens yet.
 */
export async function buildApp(options: BuildOptions = {}): Promise<FastifyInstance> {
  const env = options.env ?? process.env;
  const config = loadConfig(env, options.config);
  const features = selectEnabled(await discoverFeatures(config), config);
  for (const f of features) if (f.def.errors) registerErrorCodes(f.def.errors);
  const declared = declareSettings(await settingOwners(features));
  const site = siteDefaults(declared, config.site);

  const say = options.bootLog ?? ((line: string) => process.stderr.write(`${line}\n`));
  const db = await openFeaturesDatabase(config, features, say);
  const restoreClock = options.clock ? installClock(options.clock) : undefined;
  try {
    await options.beforeMigrate?.(db);
    if (config.database.migrateOnStart) await migrate(db, { leaseSeconds: config.database.migrationLockSeconds, say });
    const app = await assemble(
      config,
      features,
      { declared, site },
      db,
      env,
      options.logger === false ? undefined : hostLogger(config, options.logStream),
      options.selfChecks,
    );
    if (restoreClock) app.addHook('onClose', async () => restoreClock());
    return app;
  } catch (err) {
    restoreClock?.();
    await db.close();
    throw err;
  }
}

/** The site settings declared by core and the features, and their defaults from config. */
interface SiteSetup {
  declared: ReadonlyMap<string, SiteSetting>;
  site: SiteSettings;
}

async function assemble(
  config: AppConfig,
  features: LoadedFeature[],
  { declared, site }: SiteSetup,
  db: Database,
  env: NodeJS.ProcessEnv,
  logger: Pino | undefined,
  selfChecks = false,
): Promise<FastifyInstance> {
  const app = Fastify({
    bodyLimit: config.server.bodyLimit,
    trustProxy: config.server.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false } },
    forceCloseConnections: 'idle',
    frameworkErrors: routerErrors,
    genReqId: requestId,
    // Without a logger (logging off) Fastify's own factory skips making request loggers.
    childLoggerFactory: logger && requestLoggers(logger),
    logController: new RequestLog(),
    schemaController: { compilersFactory: lazySchemaCompilers() },
    clientErrorHandler: clientError,
    // Slow or stalled clients cannot hold sockets for long (issue 16); Node checks the header and
    // request deadlines every connectionsCheckingInterval, 30 s unless told.
    requestTimeout: config.server.requestTimeoutMs,
    connectionTimeout: config.server.idleTimeoutMs,
    keepAliveTimeout: config.server.idleTimeoutMs,
    http: {
      headersTimeout: Math.min(config.server.headersTimeoutMs, config.server.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(1000, config.server.headersTimeoutMs),
    },
  });
  if (logger) {
    // Fastify's own logger stays silent (see RequestLog); the host's is everyone's app.log.
    (app as { log: FastifyBaseLogger }).log = logger;
    completionLog(app);
  }
  app.server.maxConnections = config.server.maxConnections;
  capConnections(app.server, { maxPerAddress: config.server.maxConnectionsPerAddress, uncapped: config.server.proxyAddresses });

  const audit = new AuditLog(db);
  const settings = new DbSettings(db, audit, declared, site);
  await settings.load();
  settings.startRefresh(5);
  const services = new ServiceRegistry();
  services.provide(settingsRef, settings);
  const events = new EventBus(app.log, db);
  for (const f of features) {
    for (const [name, description] of Object.entries(f.def.events ?? {})) events.declare({ name, description, feature: f.def.name });
  }
  const apiKeys = new ApiKeys(db, audit, env.API_KEY, config.apiKeys.cacheSeconds);
  services.provide(apiKeysRef, apiKeys);
  services.provide(auditRef, audit);
  const featureOptions = new Map(features.map((f) => [f.def.name, f.options]));
  const metrics = metricsRegistry(config.metrics.enabled);
  const outbound = new OutboundPolicy(config.outbound.allow);

  app.decorate('appConfig', config);
  app.decorate('services', services);
  app.decorate('events', events);
  app.decorate('db', db);
  app.decorate('settings', settings);
  app.decorate('apiKeys', apiKeys);
  app.decorate(
    'features',
    features.map((f) => f.def.name),
  );
  app.decorate(
    'featureContext',
    (name: string): FeatureContext<unknown> => ({
      options: featureOptions.get(name),
      services,
      events,
      db,
      settings,
      env,
      metrics,
      outbound,
      log: app.log.child({ plugin: name }),
    }),
  );
  app.addHook('onClose', async () => {
    settings.stop();
    await db.close();
  });

  errorHandling(app, config.database.retryAfterSeconds);
  if (selfChecks) checkDeclaredErrors(app);
  plainJsonAnswers(app, selfChecks);
  await corsPolicy(app, config.server.corsOrigins);
  const readBody = await bodyParsing(app, { fieldLimit: config.server.fieldLimit, maxFields: config.server.maxFields, bodyLimit: config.server.bodyLimit });
  requestStages(app, {
    onRequest: apiKeyCheck(apiKeys),
    preValidation: { read: readBody, check: strictTypesError },
    preHandler: { check: unstorableError, run: actAsStaff },
  });
  await app.register(rateLimit, {
    global: false,
    store: rateLimitStore(app, db, config.rateLimits.sweepSeconds),
    errorResponseBuilder: (_req, ctx) => ({ statusCode: 429, code: 'FST_ERR_RATE_LIMIT_EXCEEDED', message: `Rate limit exceeded, retry in ${ctx.after}` }),
  });
  idempotencyKeys(app, db, config.idempotency);
  if (config.docs.enabled) {
    await app.register(swagger, openapiOptions());
    await app.register(swaggerUi, { routePrefix: '/docs' });
  }

  app.get(
    '/health',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness and database check (no key needed)',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal(true), database: Type.String({ examples: ['up'] }) }) },
      },
    },
    async (_request, reply) => {
      const unavailable = await db.unavailableReason();
      if (!unavailable) return { status: true as const, database: 'up' };
      reply.header('Retry-After', String(config.database.retryAfterSeconds));
      return send(reply, 'SERVICE_UNAVAILABLE', unavailable);
    },
  );
  // Browsers ask for it on every site; an icon beats a 404 in every log.
  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(FAVICON),
  );
  await app.register(async (admin) => settingsRoutes(admin, settings));
  await app.register(async (admin) => auditRoutes(admin, audit, settings));
  if (config.metrics.enabled) {
    metricsRoutes(app, metrics, config.metrics, apiKeys);
    databaseMetrics(metrics, db);
  }

  await registerFeatures(app, features);
  // While it holds, npm run restore refuses (core/server-mark.ts). Taken last, so a boot that
  // fails before has nothing to release.
  const unmark = await markServer(config.database, app.log);
  app.addHook('onClose', unmark);
  return app;
}
