import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { defineEntity, p } from './table.ts';
import type { FastifyRequest } from 'fastify';
import type { AuditLog } from './audit.ts';
import type { Step } from './http/stages.ts';
import type { Database } from './db.ts';
import { DomainError } from './errors.ts';
import { now } from './format.ts';
import { createServiceRef } from './registry.ts';
import { fields, sql } from './sql.ts';

export const CoreApiKey = defineEntity({
  name: 'CoreApiKey',
  tableName: 'core_api_keys',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64).unique(),
    keyHash: p.string().length(64).unique(),
    /** Space-separated scopes: `api`, `admin`, or a feature's (`credits:read`, `store:buy`, `delivery`). */
    scopes: p.string().length(255),
    createdAt: p.string().length(19),
    revokedAt: p.string().length(19).nullable(),
    /** When the key was last presented, to the minute: an operator sees which keys are idle. */
    lastUsedAt: p.string().length(19).nullable(),
    /** Errors to this key's requests carry the Java clients' codes (core/clients.ts), whatever its User-Agent. */
    clientCodes: p.boolean().default(false),
  },
});

const K = CoreApiKey.c;
/**
 * `api`: every public route; `admin`: also `/api/admin/…`; `<feature>`: every public route of one
 * feature; `<feature>:<action>`: the routes of that action, `read` (GET) and `write` (the rest)
 * unless a route names its own (`store:buy`). A game server's key then reaches only what it needs.
 */
export type Scope = string;
const SCOPE = /^(api|admin|[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?)$/;

/** `client_codes` as either database returns it (SQLite 0/1, MySQL a number or a string). */
const marked = (value: unknown): boolean => Boolean(Number(value));

export function isScope(value: string): boolean {
  return SCOPE.test(value);
}

/** What a key needs for one route, besides `api` or `admin`: the feature, and the feature's action. */
export function routeScopes(feature: string | undefined, method: string, action: string | undefined): string[] {
  if (!feature) return [];
  return [feature, `${feature}:${action ?? (method === 'GET' || method === 'HEAD' ? 'read' : 'write')}`];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The feature that registered the route (set by the host). */
    feature?: string;
    /** The route's action for scoped keys, when it is neither a plain read nor a plain write. */
    scopeAction?: string;
  }
}

export interface ApiKeyIdentity {
  name: string;
  scopes: Scope[];
  /** An admin marked the key for a client that reads only the Java clients' error codes. */
  clientCodes: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key the request was made with (set for every /api route). */
    apiKey?: ApiKeyIdentity;
  }
  interface FastifyContextConfig {
    /** The route authenticates its caller itself (see apiKeyHook). */
    noApiKey?: boolean;
  }
}

const USE_RESOLUTION_MS = 60_000;

function sha256(value: string): Buffer {
  // One-shot: several times cheaper than a Hash object, and it runs on every request.
  return hash('sha256', value, 'buffer');
}

/**
 * API keys are random and long, so a fast hash is enough: a stolen table does not reveal them,
 * and comparing hashes in constant time leaks nothing about the key's content.
 */
export class ApiKeys {
  readonly #db: Database;
  readonly #audit: AuditLog;
  readonly #bootstrap?: { hash: Buffer; identity: ApiKeyIdentity };
  #cache: { hash: Buffer; identity: ApiKeyIdentity }[] = [];
  #loadedAt = 0;
  #loading?: Promise<void>;
  /** Counts creates and revokes: a list read while one happened may predate it. */
  #changes = 0;
  readonly #cacheMs: number;
  readonly #usedAt = new Map<string, number>();
  /** Keys found valid since the last refresh: a game server's key is then checked without hashing. */
  #known = new Map<string, ApiKeyIdentity>();

  constructor(db: Database, audit: AuditLog, bootstrapKey: string | undefined, cacheSeconds: number) {
    this.#db = db;
    this.#audit = audit;
    this.#cacheMs = cacheSeconds * 1000;
    if (bootstrapKey) this.#bootstrap = { hash: sha256(bootstrapKey), identity: { name: 'bootstrap', scopes: ['api', 'admin'], clientCodes: false } };
  }

  async #refresh(): Promise<void> {
    const changes = this.#changes;
    const rows = await this.#db.query(sql`select ${fields({ name: K.name, key_hash: K.keyHash, scopes: K.scopes, client_codes: K.clientCodes })}
      from ${CoreApiKey} where ${K.revokedAt} is null`);
    this.#cache = rows.map((r) => ({
      hash: Buffer.from(r.key_hash, 'hex'),
      identity: { name: r.name, scopes: r.scopes.split(' ').filter(isScope), clientCodes: marked(r.client_codes) },
    }));
    // A revoke during the read may be missing from it: then the list counts as stale at once.
    this.#loadedAt = changes === this.#changes ? Date.now() : 0;
    this.#known = new Map();
  }

  /**
   * The identity of a key found valid since the last refresh, while the list is fresh and no use
   * is due to be written; else undefined, and `check` decides. Most requests are answered here,
   * without a promise.
   */
  known(presented: string): ApiKeyIdentity | undefined {
    if (Date.now() - this.#loadedAt > this.#cacheMs) return undefined;
    const found = this.#known.get(presented);
    if (!found || (found !== this.#bootstrap?.identity && Date.now() - (this.#usedAt.get(found.name) ?? 0) >= USE_RESOLUTION_MS)) return undefined;
    return found;
  }

  /** The identity of a presented key, or undefined. Every stored hash is compared, so timing says nothing. */
  async check(presented: string): Promise<ApiKeyIdentity | undefined> {
    if (Date.now() - this.#loadedAt > this.#cacheMs) {
      // Again while a create or revoke came during the read (#refresh left the list stale): a
      // revoke holds for every request after it, even one that joined a read begun before it.
      do {
        this.#loading ??= this.#refresh().finally(() => {
          this.#loading = undefined;
        });
        await this.#loading;
      } while (this.#loadedAt === 0);
    }
    let found = this.#known.get(presented);
    if (!found) {
      const presentedHash = sha256(presented);
      for (const entry of this.#bootstrap ? [this.#bootstrap, ...this.#cache] : this.#cache) {
        if (timingSafeEqual(entry.hash, presentedHash) && !found) found = entry.identity;
      }
      // Only valid keys are kept, so random keys cannot grow the map; it empties at each refresh.
      if (found) this.#known.set(presented, found);
    }
    if (found && found !== this.#bootstrap?.identity) await this.#recordUse(found.name);
    return found;
  }

  /**
   * Writes `last_used_at` at most once a minute per key: a busy game server then costs one small
   * write a minute, and a failed write only delays the figure (it is tried again next request).
   */
  async #recordUse(name: string): Promise<void> {
    const at = Date.now();
    if (at - (this.#usedAt.get(name) ?? 0) < USE_RESOLUTION_MS) return;
    this.#usedAt.set(name, at);
    try {
      await this.#db.run(sql`update ${CoreApiKey} set ${K.lastUsedAt} = ${now()} where ${K.name} = ${name}`);
    } catch {
      this.#usedAt.delete(name);
    }
  }

  async create(name: string, scopes: Scope[], { clientCodes = false } = {}): Promise<string> {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new DomainError('VALIDATION_ERROR', 'name: 1-64 characters of A-Z a-z 0-9 _ . -');
    const bad = scopes.find((s) => !isScope(s));
    if (bad !== undefined || scopes.length === 0)
      throw new DomainError('VALIDATION_ERROR', `scope: "${bad ?? ''}" is not a scope (api, admin, <feature> or <feature>:<action>)`);
    if (scopes.join(' ').length > 255) throw new DomainError('VALIDATION_ERROR', 'scope: at most 255 characters in all');
    const key = `ck_${randomBytes(24).toString('hex')}`;
    const existing = await this.#db.query(sql`select ${K.id} from ${CoreApiKey} where ${K.name} = ${name}`);
    if (existing.length) throw new DomainError('CONFLICT', `an API key named "${name}" exists already`);
    await this.#db.transaction(async () => {
      await CoreApiKey.insert(this.#db, { name, keyHash: sha256(key).toString('hex'), scopes: scopes.join(' '), createdAt: now(), clientCodes });
      await this.#audit.record({
        action: 'core.apikey.create',
        target: { type: 'apikey', id: name },
        summary: `Created API key ${name} (${scopes.join(' ')})`,
        after: { scopes, clientCodes },
      });
    });
    this.#changed();
    return key;
  }

  /** Marks (or unmarks) an active key for the Java clients' error codes; false when no active key has the name. */
  async setClientCodes(name: string, clientCodes: boolean): Promise<boolean> {
    const { affectedRows } = await this.#db.run(
      sql`update ${CoreApiKey} set ${K.clientCodes} = ${clientCodes} where ${K.name} = ${name} and ${K.revokedAt} is null`,
    );
    this.#changed();
    return affectedRows > 0;
  }

  #changed(): void {
    this.#changes++;
    this.#loadedAt = 0;
  }

  async list(): Promise<{ name: string; scopes: string; createdAt: string; revokedAt: string | null; lastUsedAt: string | null; clientCodes: boolean }[]> {
    const listed = fields({
      name: K.name,
      scopes: K.scopes,
      created_at: K.createdAt,
      revoked_at: K.revokedAt,
      last_used_at: K.lastUsedAt,
      client_codes: K.clientCodes,
    });
    const rows = await this.#db.query(sql`select ${listed} from ${CoreApiKey} order by ${K.id}`);
    return rows.map((r) => ({
      name: r.name,
      scopes: r.scopes,
      createdAt: r.created_at,
      revokedAt: r.revoked_at,
      lastUsedAt: r.last_used_at,
      clientCodes: marked(r.client_codes),
    }));
  }

  async revoke(name: string): Promise<boolean> {
    const affectedRows = await this.#db.transaction(async () => {
      const revoked = (await this.#db.run(sql`update ${CoreApiKey} set ${K.revokedAt} = ${now()} where ${K.name} = ${name} and ${K.revokedAt} is null`))
        .affectedRows;
      if (revoked > 0) await this.#audit.record({ action: 'core.apikey.revoke', target: { type: 'apikey', id: name }, summary: `Revoked API key ${name}` });
      return revoked;
    });
    this.#changed();
    return affectedRows > 0;
  }
}

/** The host's API keys, for the console's section (keys are the host's, not a feature's). */
export const apiKeysRef = createServiceRef<ApiKeys>('core.apiKeys');

/**
 * Every /api route needs a key; /api/admin routes need the admin scope; the other routes `api`,
 * or the scope of the route's feature or of its action. A route that authenticates its caller
 * otherwise (a payment gateway's signed webhook) opts out with `config: { noApiKey: true }`.
 * A step of the host's onRequest hook (core/http/stages.ts): `done` is called at once off /api, so
 * the pages and the rest pay no promise for it.
 */
export function apiKeyCheck(keys: ApiKeys): Step {
  return (request, done) => {
    // The pattern of the route that will run decides, not the raw URL: the router decodes
    // `/%61pi/%61dmin/settings` to the admin route, whose raw text looks like neither. A URL that
    // matches no route (a 404) has no pattern and falls back to its raw path.
    const { url, config } = request.routeOptions;
    const path = url ?? request.url.split('?', 1)[0]!;
    if (!/^\/+api(\/|$)/.test(path) || config?.noApiKey) return done();
    const header = request.headers['x-api-key'];
    const presented = Array.isArray(header) ? header[0] : header;
    const known = presented ? keys.known(presented) : undefined;
    if (!known) {
      checkKey(request, path, presented, keys).then(() => done(), done);
      return;
    }
    try {
      authorize(request, path, known);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
}

/** The key an /api request presents, checked against the route's scope. */
async function checkKey(request: FastifyRequest, path: string, presented: string | undefined, keys: ApiKeys): Promise<void> {
  if (!presented) throw new DomainError('INVALID_API_KEY', 'The X-Api-Key header is missing.');
  const identity = await keys.check(presented);
  if (!identity) throw new DomainError('INVALID_API_KEY', 'The X-Api-Key header does not hold a valid API key.');
  authorize(request, path, identity);
}

/** A valid key's identity against the route's scope; it stays on the request. */
function authorize(request: FastifyRequest, path: string, identity: ApiKeyIdentity): void {
  if (/^\/+api\/+admin(\/|$)/.test(path)) {
    if (!identity.scopes.includes('admin')) throw new DomainError('FORBIDDEN', 'This API key lacks the admin scope.');
  } else if (!identity.scopes.includes('api') && !identity.scopes.includes('admin')) {
    const { feature, scopeAction } = request.routeOptions.config;
    const needed = routeScopes(feature, request.method, scopeAction);
    if (!needed.some((s) => identity.scopes.includes(s))) {
      throw new DomainError('FORBIDDEN', `This API key lacks the scope for this route (${needed.join(' or ') || 'api'}).`);
    }
  }
  request.apiKey = identity;
}
