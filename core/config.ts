import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { isAddressOrRange } from './connections.ts';
import { isTimeZone } from './format.ts';

export const rootDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * One site setting: its default comes from `site.<key>` in config, admins change it at run time
 * (`PATCH /api/admin/settings`, the console's site settings), and code reads it through
 * `ctx.settings.get()`. Core declares its own below; a feature declares its own in its definition
 * (`settings`), and adds their types to SiteSettings.
 */
export interface SiteSetting<T extends TSchema = TSchema> {
  /** Its type, bounds and default; its description and examples document the admin API. */
  schema: T;
  /** Its field in the console's site settings form. */
  label: string;
  hint?: string;
}

/**
 * The site settings' values by key. A feature adds its own by augmenting this interface (as
 * EventMap), usually with `SettingValues<typeof itsSettings>`.
 */
export interface SiteSettings {
  currency: string;
  timezone: string;
}

/** The values of a set of declared settings, by key. */
export type SettingValues<T extends Record<string, SiteSetting>> = { [K in keyof T]: Static<T[K]['schema']> };

/** Core's own site settings; every feature's follow them. */
export const coreSettings = {
  currency: {
    schema: Type.String({ pattern: '^[A-Z]{3}$', default: 'USD', examples: ['USD'] }),
    label: 'Currency',
    hint: 'Three capital letters (ISO 4217): what real-money prices are in.',
  },
  timezone: {
    schema: Type.String({ default: 'UTC', description: 'IANA time zone of the timestamps the API sends and takes', examples: ['Europe/Berlin'] }),
    label: 'Time zone',
    hint: 'An IANA name, e.g. Europe/Berlin: dates are shown and read in it.',
  },
} satisfies Record<string, SiteSetting>;

/**
 * The schema of a set of settings, checking config and changes with defaults and refusing
 * unknown keys; `api` gives the admin API's shape instead, without defaults (a PATCH must not
 * fill in what was not sent).
 */
export function settingsSchema(settings: Iterable<[string, SiteSetting]>, { api = false } = {}) {
  const properties = Object.fromEntries(
    [...settings].map(([key, { schema }]) => {
      if (!api) return [key, schema];
      const { default: _default, ...rest } = schema;
      return [key, rest as TSchema];
    }),
  );
  return api ? Type.Object(properties) : Type.Object(properties, { additionalProperties: false });
}

const FeatureSwitch = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    /** For third-party features: the npm package (or a path) to import. */
    package: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: true },
);

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: '127.0.0.1' }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
        bodyLimit: Type.Integer({ minimum: 1024, default: 1048576 }),
        fieldLimit: Type.Integer({ minimum: 1, default: 65536 }),
        maxFields: Type.Integer({ minimum: 1, default: 100 }),
        trustProxy: Type.Boolean({ default: false }),
        shutdownGraceMs: Type.Integer({ minimum: 0, default: 10000 }),
        /** Origins a browser front end may call the API from (`*` for any); none by default. */
        corsOrigins: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
        /** The request line and headers must arrive within this, or the socket is closed. */
        headersTimeoutMs: Type.Integer({ minimum: 100, default: 10000 }),
        /** The whole request, body included, must arrive within this (answered 408, then closed). */
        requestTimeoutMs: Type.Integer({ minimum: 100, default: 30000 }),
        /** A socket on which nothing moves for this long is closed: a body that stops arriving, an idle keep-alive client. */
        idleTimeoutMs: Type.Integer({ minimum: 100, default: 15000 }),
        /** Open connections at most; further ones are closed at once. */
        maxConnections: Type.Integer({ minimum: 1, default: 1024 }),
        /** Open connections one remote address may hold, counted as they are accepted; more are closed at once. */
        maxConnectionsPerAddress: Type.Integer({ minimum: 1, default: 64 }),
        /** Reverse proxies (addresses or CIDR ranges): each carries many clients, so its connections have no per-address cap. */
        proxyAddresses: Type.Array(Type.String({ minLength: 1 }), { default: ['127.0.0.1', '::1'] }),
        /**
         * After this long with the event loop idle on end, hand memory back to the machine (core/idle-reclaim.ts);
         * 0: never. It needs node's --expose-gc on the command line, which npm start and the image pass.
         */
        idleReclaimSeconds: Type.Integer({ minimum: 0, default: 120 }),
      },
      { default: {}, additionalProperties: false },
    ),
    database: Type.Object(
      {
        url: Type.String({ default: 'sqlite:./data/community.db' }),
        migrateOnStart: Type.Boolean({ default: true }),
        poolSize: Type.Integer({ minimum: 1, default: 10 }),
        connectTimeoutMs: Type.Integer({ minimum: 100, default: 2000 }),
        retryAfterSeconds: Type.Integer({ minimum: 1, default: 2 }),
        /** MySQL/MariaDB: how many times a transaction runs before a deadlock or (Galera) certification conflict is answered 503. */
        transactionTries: Type.Integer({ minimum: 1, default: 5 }),
        /** The wait before running it again: random, up to this × the try number. */
        retryDelayMs: Type.Integer({ minimum: 0, default: 10 }),
        /** After a write refused for a full disk (or a read-only database), /health answers 503 until a write succeeds
         * or this long passes without another such refusal. */
        writeFaultSeconds: Type.Integer({ minimum: 1, default: 60 }),
        debug: Type.Boolean({ default: false }),
        /** At boot, how long to keep retrying a database that cannot be reached (0: fail at once). */
        bootRetrySeconds: Type.Integer({ minimum: 0, default: 60 }),
        /** How long the lock of an instance migrating the database outlives its last renewal: a crashed migrator's
         * lock is taken over after this (core/db/migration-lock.ts). */
        migrationLockSeconds: Type.Integer({ minimum: 3, default: 60 }),
        /** Create the MySQL/MariaDB database DATABASE_URL names when it does not exist (off: refuse to start). */
        createDatabase: Type.Boolean({ default: false }),
        /** MySQL/MariaDB: how often the connection marking a running server (core/server-mark.ts) is pinged;
         * below a proxy's idle timeout and the database's wait_timeout. */
        markPingSeconds: Type.Integer({ minimum: 1, default: 60 }),
        /** MySQL/MariaDB: the sql_mode of the server's connections, where a host needs one; empty keeps the server's. */
        sqlMode: Type.String({ default: '' }),
      },
      { default: {}, additionalProperties: false },
    ),
    log: Type.Object(
      {
        level: Type.Union(
          ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
          { default: 'info' },
        ),
      },
      { default: {}, additionalProperties: false },
    ),
    apiKeys: Type.Object(
      {
        /** How long a revoked or created key may go unnoticed by a running server. */
        cacheSeconds: Type.Number({ minimum: 0, default: 5 }),
      },
      { default: {}, additionalProperties: false },
    ),
    rateLimits: Type.Object(
      {
        /** How often windows that have ended are deleted from the database's count of each route's limit. */
        sweepSeconds: Type.Integer({ minimum: 1, default: 60 }),
      },
      { default: {}, additionalProperties: false },
    ),
    idempotency: Type.Object(
      {
        /** How long an Idempotency-Key's answer is kept and replayed; after it the key may be used again (core/idempotency.ts). */
        ttlHours: Type.Number({ exclusiveMinimum: 0, default: 24 }),
        /** How long a key stays "in progress" without an answer before a retry may take it over (its first request died before its commit). */
        leaseSeconds: Type.Integer({ minimum: 1, default: 60 }),
        /** How often keys past their expiry are deleted. */
        sweepSeconds: Type.Integer({ minimum: 1, default: 600 }),
      },
      { default: {}, additionalProperties: false },
    ),
    docs: Type.Object({ enabled: Type.Boolean({ default: true }) }, { default: {}, additionalProperties: false }),
    metrics: Type.Object(
      {
        /** `GET /metrics` in Prometheus format. */
        enabled: Type.Boolean({ default: false }),
        /** Serve it without an admin key (only where the port is reachable from a private network). */
        public: Type.Boolean({ default: false }),
      },
      { default: {}, additionalProperties: false },
    ),
    outbound: Type.Object(
      {
        /**
         * Addresses and CIDR ranges inside (loopback, private, link-local, …) that addresses admins or
         * players give the server (webhook endpoints) may reach: a receiver on the owner's own network.
         * None by default (core/outbound.ts).
         */
        allow: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      },
      { default: {}, additionalProperties: false },
    ),
    /** Site settings' defaults: core's checked here, the features' once they are known (core/settings.ts siteDefaults). */
    site: Type.Object({ currency: coreSettings.currency.schema, timezone: coreSettings.timezone.schema }, { default: {}, additionalProperties: true }),
    plugins: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]*$' }), FeatureSwitch, { default: {} }),
  },
  { additionalProperties: false },
);

export type AppConfig = Static<typeof ConfigSchema>;

/** Thrown at boot when a setting is wrong; the message names it. */
export class ConfigError extends Error {}

/**
 * An owner's folder of files replacing shipped ones of the same name (a feature's `themeDir`,
 * relative to the install), so their changes survive upgrades without a fork. Answers, for a
 * file, the owner's copy when there is one, else `fallback`; a folder that is not there stops boot.
 */
export function overrideFolder(key: string, themeDir: string): (file: string, fallback: string) => string {
  const dir = themeDir ? resolve(rootDir, themeDir) : '';
  if (dir && !(existsSync(dir) && statSync(dir).isDirectory())) throw new ConfigError(`${key}: there is no folder at ${dir}.`);
  return (file, fallback) => (dir && existsSync(join(dir, file)) ? join(dir, file) : fallback);
}

/** Deep merge of plain objects; arrays and scalars replace. */
export function merge(base: unknown, over: unknown): unknown {
  if (!isPlain(base) || !isPlain(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = merge(out[k], v);
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`Cannot read config file ${path}: ${(err as Error).message}`);
  }
}

/** Validates a value against a schema with defaults applied; errors name the setting by its path. */
export function validate<T extends TSchema>(schema: T, value: unknown, where: string): Static<T> {
  const withDefaults = Value.Default(schema, structuredClone(value ?? {}));
  const converted = Value.Convert(schema, withDefaults);
  const first = Value.Errors(schema, converted).First();
  if (first) {
    const path = first.path.split('/').filter(Boolean).join('.');
    // A choice among fixed values says which ones, so the fix is in the message.
    const choices = (first.schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
    const message =
      first.message === 'Unexpected property'
        ? 'unknown setting (misspelled?)'
        : choices?.every((c) => c !== undefined)
          ? `must be one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`
          : first.message;
    throw new ConfigError(`Invalid setting ${[where, path].filter(Boolean).join('.')}: ${message}`);
  }
  return converted as Static<T>;
}

/**
 * The configuration: config/default.json, then the file named by CONFIG, then environment
 * variables, then `overrides` (tests). Secrets come only from the environment.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: unknown = {}): AppConfig {
  let raw = readJson(resolve(rootDir, 'config/default.json'));
  if (env.CONFIG) raw = merge(raw, readJson(resolve(env.CONFIG)));
  const fromEnv: Record<string, Record<string, unknown>> = { server: {}, database: {}, log: {} };
  if (env.PORT !== undefined) fromEnv.server!.port = env.PORT;
  if (env.HOST !== undefined) fromEnv.server!.host = env.HOST;
  if (env.DATABASE_URL !== undefined) fromEnv.database!.url = env.DATABASE_URL;
  if (env.LOG_LEVEL !== undefined) fromEnv.log!.level = env.LOG_LEVEL;
  raw = merge(merge(raw, fromEnv), overrides);
  const config = validate(ConfigSchema, raw, '');
  // Checked at boot like a PATCH of the settings would be, not at the first request that needs it.
  const badProxy = config.server.proxyAddresses.find((a) => !isAddressOrRange(a));
  if (badProxy !== undefined) throw new ConfigError(`Invalid setting server.proxyAddresses: "${badProxy}" is not an IP address or CIDR range.`);
  const badAllow = config.outbound.allow.find((a) => !isAddressOrRange(a));
  if (badAllow !== undefined) throw new ConfigError(`Invalid setting outbound.allow: "${badAllow}" is not an IP address or CIDR range.`);
  if (!isTimeZone(config.site.timezone)) {
    throw new ConfigError(`Invalid setting site.timezone: unknown time zone "${config.site.timezone}" (use an IANA name such as "Europe/Berlin").`);
  }
  return config;
}
