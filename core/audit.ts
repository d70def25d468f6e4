/**
 * The audit log: who (a console user or an API key) changed what record, when, with its values
 * before and after, and the request that did it. It lives in core because every feature's admin
 * actions feed it and staff read it in one place; a feature only calls `record()` inside the
 * transaction of its change, so the entry commits or rolls back with it. Who acted is not passed
 * down through the services: the request that runs them carries it (set by the API key check or
 * the console's sign-in), so a service stays free of HTTP. Only staff's actions are kept: a call
 * with no one acting (a player's purchase, a gateway's webhook, a background job) records nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Type, type Static } from '@sinclair/typebox';
import { countParam, type Database } from './db.ts';
import { now } from './format.ts';
import { type Sql, sql, where } from './sql.ts';
import type { Step } from './http/stages.ts';
import { createServiceRef } from './registry.ts';
import { defineEntity, p, type TableRecord } from './table.ts';

export const CoreAuditLog = defineEntity({
  name: 'CoreAuditLog',
  tableName: 'core_audit_log',
  properties: {
    id: p.integer().primary().autoincrement(),
    at: p.string().length(19),
    /** `staff` (signed in to the console), `key` (an API key), `cli` (the command line on the server). */
    actorKind: p.string().length(8).$type<ActorKind>(),
    /** The username or the key's name, as it was then. */
    actor: p.string().length(64).index(),
    /** `store.order.refund`, `users.role.grant`: the feature, the record, the verb. */
    action: p.string().length(64).index(),
    targetType: p.string().length(32),
    targetId: p.string().length(64).index(),
    /** One line for people: "Refunded order 12 of steve (14.00)". */
    summary: p.string().length(255),
    /** The record's values before and after, as JSON, where they say more than the summary. */
    before: p.text().nullable(),
    after: p.text().nullable(),
    requestId: p.string().length(64).nullable(),
  },
});

/** `gateway`: a payment gateway's signed webhook (a dispute opened or closed). */
export type ActorKind = 'staff' | 'key' | 'cli' | 'gateway';
export type AuditRow = TableRecord<typeof CoreAuditLog>;

export interface AuditActor {
  kind: ActorKind;
  name: string;
}

export interface AuditEntry {
  action: string;
  target: { type: string; id: number | string };
  summary: string;
  before?: unknown;
  after?: unknown;
}

export interface AuditFilter {
  actor?: string;
  /** An action, or the start of one ending in a dot (`store.`). */
  action?: string;
  targetType?: string;
  targetId?: string;
  /** Entries older than this id (the next page). */
  before?: number;
  limit: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is acting, when a person signed in makes the request (the console sets it); API keys are read from `apiKey`. */
    actor?: AuditActor;
  }
}

const acting = new AsyncLocalStorage<{ actor: AuditActor; requestId?: string }>();

const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
/** Characters of before/after kept: MySQL's text column holds 65,535 bytes, and one character may take up to six (\u0001). */
const MAX_JSON = 10_000;
const json = (value: unknown) => {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  return text.length > MAX_JSON ? JSON.stringify({ clipped: text.slice(0, MAX_JSON) }) : text;
};

export class AuditLog {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Who is acting now, if anyone. */
  actor(): AuditActor | undefined {
    return acting.getStore()?.actor;
  }

  /** Runs `fn` as `actor` (the command line, which has no request). */
  as<T>(actor: AuditActor, fn: () => Promise<T>): Promise<T> {
    return acting.run({ actor }, fn);
  }

  /**
   * Writes an entry for the change being made, when staff are acting; call it inside the change's
   * transaction. Nothing is written when no one acts (see the top of this file).
   */
  async record(what: AuditEntry | (() => Promise<AuditEntry>)): Promise<void> {
    const store = acting.getStore();
    if (!store) return;
    // A function when the entry needs reads (names for the summary): none are made when no one acts.
    const entry = typeof what === 'function' ? await what() : what;
    await CoreAuditLog.insert(this.#db, {
      at: now(),
      actorKind: store.actor.kind,
      actor: clip(store.actor.name, 64),
      action: entry.action,
      targetType: entry.target.type,
      targetId: String(entry.target.id),
      summary: clip(entry.summary, 255),
      before: json(entry.before),
      after: json(entry.after),
      requestId: store.requestId ?? null,
    });
  }

  /** Entries newest first, filtered, `limit` of them from `before`. */
  async list(filter: AuditFilter): Promise<AuditRow[]> {
    const c = CoreAuditLog.c;
    const is = (column: Sql, value: string | undefined) => value !== undefined && value !== '' && sql`${column} = ${value}`;
    const action = filter.action?.endsWith('.')
      ? sql`${c.action} like ${`${filter.action.replace(/[!%_]/g, '!$&')}%`} escape '!'`
      : is(c.action, filter.action);
    return CoreAuditLog.select(
      this.#db,
      sql`${where(
        is(c.actor, filter.actor),
        is(c.targetType, filter.targetType),
        is(c.targetId, filter.targetId),
        action,
        filter.before !== undefined && sql`${c.id} < ${filter.before}`,
      )} order by ${c.id} desc limit ${countParam(filter.limit)}`,
    );
  }
}

export const auditRef = createServiceRef<AuditLog>('core.audit');

/** Methods that change nothing, so record nothing: they skip the context, which every request would pay for. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Runs every handler of a request made by staff (a console user, an API key) as them. Requests of
 * no one (the storefront, a webhook) pass on untouched. A step of the host's preHandler hook
 * (core/http/stages.ts): by then the key is checked and the console's sign-in read, and the body is
 * parsed (its stream events would lose the context).
 */
export const actAsStaff: Step = (request, done) => {
  const actor = SAFE_METHODS.has(request.method)
    ? undefined
    : (request.actor ?? (request.apiKey ? { kind: 'key' as const, name: request.apiKey.name } : undefined));
  if (actor) acting.run({ actor, requestId: request.id }, done);
  else done();
};

export const AuditQuery = Type.Object({
  actor: Type.Optional(Type.String({ maxLength: 64, description: 'a username or API key name' })),
  action: Type.Optional(Type.String({ maxLength: 64, description: 'an action (`store.order.refund`) or the start of one ending in a dot (`store.`)' })),
  targetType: Type.Optional(Type.String({ maxLength: 32, description: 'what kind of record (`order`, `product`, `user`)' })),
  targetID: Type.Optional(Type.String({ maxLength: 64, description: "the record's id" })),
  before: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: 'entries older than this id (the next page)' })),
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: '1 to 200, default 50' })),
});

/** The query of the admin API and the console's filter form, as a filter. */
export function auditFilter(q: Static<typeof AuditQuery>, maxLimit: number): AuditFilter {
  const limit = q.limit === undefined ? 50 : Math.min(Math.max(Number(q.limit), 1), maxLimit);
  const before = q.before === undefined ? undefined : Number(q.before);
  return { actor: q.actor, action: q.action, targetType: q.targetType, targetId: q.targetID, before, limit };
}
