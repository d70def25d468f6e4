import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { countParam } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { DeclaredEvent } from '../../core/events.ts';
import { now } from '../../core/format.ts';
import type { EndpointAddresses } from './addresses.ts';
import type { AttemptView, DeliveryView, EndpointInput, EndpointView, NotificationsService, TemplateView } from './contract.ts';
import { BUILT_IN, discordMessage, wordingFor } from './discord.ts';
import { type Sql, sql } from '../../core/sql.ts';
import { joined, type TableRecord } from '../../core/table.ts';
import {
  NotificationsAttempt,
  NotificationsDelivery as D,
  NotificationsEndpoint as E,
  NotificationsEvent,
  NotificationsTemplate as T,
  pendingDelivery,
} from './entities.ts';

type Endpoint = TableRecord<typeof E>;
const VD = D.as('d');
const VE = NotificationsEvent.as('e');
const VIEW = joined({ d: VD, e: VE });

export const TEST_EVENT = 'notifications.test';

function view(e: Endpoint): EndpointView {
  const { id, name, kind, url, secret, active, createdDate } = e;
  return { id, name, kind, url, secret, events: e.events.split(' ').filter(Boolean), active, createdDate };
}

/** An endpoint as the audit log keeps it: never its secret. */
function audited({ secret: _secret, ...kept }: EndpointView): Omit<EndpointView, 'secret'> {
  return kept;
}

type NewEvent = Omit<TableRecord<typeof NotificationsEvent>, 'id'>;

function event(name: string, payload: unknown, fanned: boolean): NewEvent {
  return { messageId: `msg_${randomUUID().replaceAll('-', '')}`, name, payload: JSON.stringify(payload), createdDate: now(), fanned };
}

export class DbNotificationsService implements NotificationsService {
  readonly #db: Database;
  readonly #audit: AuditLog;
  readonly #declared: () => DeclaredEvent[];
  readonly #cacheMs: number;
  readonly #nameOf: (userId: number) => Promise<string | undefined>;
  readonly #addresses: EndpointAddresses;
  /** Event name → the active endpoints subscribed to it; read on every event, so kept in memory. */
  #subscribers = new Map<string, number[]>();
  #loadedAt = 0;
  #loading: Promise<void> | undefined;
  /** Called after a commit that queued events (or a delivery by hand): the worker looks at the queue soon. */
  onQueued: () => void = () => undefined;

  constructor(
    db: Database,
    audit: AuditLog,
    declared: () => DeclaredEvent[],
    cacheSeconds: number,
    nameOf: (userId: number) => Promise<string | undefined>,
    addresses: EndpointAddresses,
  ) {
    this.#db = db;
    this.#addresses = addresses;
    this.#audit = audit;
    this.#nameOf = nameOf;
    this.#declared = declared;
    this.#cacheMs = cacheSeconds * 1000;
  }

  /** Reads the subscriptions again when they are older than the cache allows (another process may have changed them). */
  async refresh(force = false): Promise<void> {
    if (!force && Date.now() - this.#loadedAt < this.#cacheMs) return;
    this.#loading ??= (async () => {
      const active = await E.select(this.#db, sql`where ${E.c.active} = ${1}`);
      const next = new Map<string, number[]>();
      for (const e of active) for (const name of view(e).events) next.set(name, [...(next.get(name) ?? []), e.id]);
      this.#subscribers = next;
      this.#loadedAt = Date.now();
    })().finally(() => {
      this.#loading = undefined;
    });
    await this.#loading;
  }

  /** The active endpoints subscribed to `name` now (the worker fans events out to these). */
  subscribers(name: string): number[] {
    return this.#subscribers.get(name) ?? [];
  }

  /**
   * Runs inside the emitting transaction (an `onCommitting` listener): the event commits with the
   * change or not at all, so a crash right after the commit loses nothing. A transaction's events
   * are one multi-row insert at its commit (on SQLite, with those of every transaction sharing the
   * commit), and nothing more: the worker fans them out to the endpoints' deliveries, off the request.
   */
  enqueue(name: string, payload: unknown): Promise<void> | undefined {
    // Most writes tell of an event no endpoint subscribes to: that answer needs no promise to wait on.
    if (Date.now() - this.#loadedAt < this.#cacheMs && !this.#subscribers.get(name)?.length) return undefined;
    return this.#enqueue(name, payload);
  }

  async #enqueue(name: string, payload: unknown): Promise<void> {
    if (Date.now() - this.#loadedAt >= this.#cacheMs) await this.refresh();
    if (!this.#subscribers.get(name)?.length) return;
    await this.#db.collect(this, event(name, payload, false), this.#write);
    this.#db.afterCommit(this.#queued);
  }

  readonly #write = (events: NewEvent[]): Promise<void> => NotificationsEvent.insertMany(this.#db, events);
  readonly #queued = (): void => this.onQueued();

  async endpoints(): Promise<EndpointView[]> {
    return (await E.select(this.#db, sql`order by ${E.c.id}`)).map(view);
  }

  async endpoint(id: number): Promise<EndpointView> {
    const e = await E.find(this.#db, id);
    if (!e) throw new DomainError('NOTIFICATION_ENDPOINT_NOT_FOUND', `There is no endpoint ${id}.`);
    return view(e);
  }

  /** `input` checked; `current`, the endpoint it changes, gives the kind or address it leaves as they are. */
  #checked(input: Partial<EndpointInput>, current?: EndpointView): Omit<Partial<Endpoint>, 'id'> {
    const known = new Set([...this.#declared().map((e) => e.name)]);
    const unknown = input.events?.find((name) => !known.has(name));
    if (unknown !== undefined) {
      throw new DomainError('NOTIFICATION_UNKNOWN_EVENT', `events: no feature declares the event "${unknown}" (see GET /api/admin/notifications/events).`);
    }
    const url = input.url ?? current?.url;
    if (url !== undefined && (input.url !== undefined || input.kind !== undefined)) {
      const problem = this.#addresses.problem(input.kind ?? current?.kind ?? 'webhook', url);
      if (problem) throw new DomainError('VALIDATION_ERROR', problem);
    }
    return {
      name: input.name,
      kind: input.kind,
      url: input.url,
      active: input.active,
      events: input.events === undefined ? undefined : [...new Set(input.events)].join(' '),
    };
  }

  async createEndpoint(input: EndpointInput): Promise<EndpointView> {
    const checked = this.#checked(input);
    const created = await this.#db.transaction(async () => {
      const id = await E.insert(this.#db, { ...checked, secret: `whsec_${randomBytes(24).toString('base64')}`, createdDate: now() });
      const after = await this.endpoint(id);
      await this.#audit.record({
        action: 'notifications.endpoint.create',
        target: { type: 'endpoint', id },
        summary: `Added webhook endpoint ${after.name}`,
        after: audited(after),
      });
      return after;
    });
    await this.refresh(true);
    return created;
  }

  async updateEndpoint(id: number, input: Partial<EndpointInput>): Promise<EndpointView> {
    const updated = await this.#db.transaction(async () => {
      const before = await this.endpoint(id);
      await E.update(this.#db, id, this.#checked(input, before));
      const after = await this.endpoint(id);
      await this.#audit.record({
        action: 'notifications.endpoint.update',
        target: { type: 'endpoint', id },
        summary: `Changed webhook endpoint ${after.name}`,
        before: audited(before),
        after: audited(after),
      });
      return after;
    });
    await this.refresh(true);
    return updated;
  }

  async deleteEndpoint(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.endpoint(id);
      const A = NotificationsAttempt;
      await this.#db.run(sql`delete from ${A} where ${A.c.deliveryId} in (select ${D.c.id} from ${D} where ${D.c.endpointId} = ${id})`);
      await this.#db.run(sql`delete from ${D} where ${D.c.endpointId} = ${id}`);
      await this.#db.run(sql`delete from ${E} where ${E.c.id} = ${id}`);
      await this.#audit.record({
        action: 'notifications.endpoint.delete',
        target: { type: 'endpoint', id },
        summary: `Deleted webhook endpoint ${before.name}`,
        before: audited(before),
      });
    });
    await this.refresh(true);
  }

  /** Deliveries (`d`) with their events (`e`) and attempts, `rest` saying which and in what order. */
  async #views(rest: Sql): Promise<DeliveryView[]> {
    const rows = await this.#db.queryArrays(sql`select ${VIEW.columns} from ${VD} join ${VE} on ${VE.c.id} = ${VD.c.eventId} ${rest}`);
    if (rows.length === 0) return [];
    const deliveries = rows.map(VIEW.read);
    const ids = deliveries.map(({ d }) => d.id);
    const A = NotificationsAttempt;
    const attempts = await A.select(this.#db, sql`where ${A.c.deliveryId} in ${ids} order by ${A.c.id}`);
    const byDelivery = new Map<number, AttemptView[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.deliveryId) ?? [];
      list.push({ startedDate: a.startedDate, durationMs: a.durationMs, status: a.status, response: a.response, error: a.error });
      byDelivery.set(a.deliveryId, list);
    }
    return deliveries.map(({ d, e }) => ({
      id: d.id,
      endpointId: d.endpointId,
      messageId: e.messageId,
      event: e.name,
      status: d.status,
      attempts: byDelivery.get(d.id) ?? [],
      nextAttemptDate: d.nextAttemptDate,
      createdDate: e.createdDate,
    }));
  }

  async deliveries(endpointId: number, limit: number): Promise<DeliveryView[]> {
    await this.endpoint(endpointId);
    return this.#views(sql`where ${VD.c.endpointId} = ${endpointId} order by ${VD.c.id} desc limit ${countParam(limit)}`);
  }

  async delivery(id: number): Promise<DeliveryView> {
    const [found] = await this.#views(sql`where ${VD.c.id} = ${id}`);
    if (!found) throw new DomainError('NOTIFICATION_DELIVERY_NOT_FOUND', `There is no delivery ${id}.`);
    return found;
  }

  async redeliver(id: number): Promise<DeliveryView> {
    await this.#db.transaction(async () => {
      const before = await this.delivery(id);
      const at = now();
      // Conditional: a row still queued or being sent is not queued twice.
      const { affectedRows } = await this.#db.run(sql`update ${D} set ${D.c.status} = 'pending', ${D.c.nextAttemptDate} = ${at}, ${D.c.updatedDate} = ${at}
        where ${D.c.id} = ${id} and ${D.c.status} in ('delivered', 'failed')`);
      if (affectedRows === 0) throw new DomainError('NOTIFICATION_DELIVERY_QUEUED', `Delivery ${id} is already queued; it goes out by itself.`);
      await this.#audit.record({
        action: 'notifications.delivery.redeliver',
        target: { type: 'delivery', id },
        summary: `Queued ${before.event} again for endpoint ${before.endpointId}`,
        before: { status: before.status },
        after: { status: 'pending' },
      });
    });
    this.onQueued();
    return this.delivery(id);
  }

  async sendTest(endpointId: number): Promise<DeliveryView> {
    await this.endpoint(endpointId);
    // Fanned out here, to this one endpoint, whatever it subscribes to.
    const eventId = await this.#db.transaction(async () => {
      const id = await NotificationsEvent.insert(this.#db, event(TEST_EVENT, { endpointId }, true));
      await D.insert(this.#db, pendingDelivery(id, endpointId, now()));
      await this.#audit.record({ action: 'notifications.endpoint.test', target: { type: 'endpoint', id: endpointId }, summary: 'Sent a test message' });
      return id;
    });
    this.onQueued();
    const [delivery] = await this.#views(sql`where ${VD.c.eventId} = ${eventId}`);
    return delivery!;
  }

  /** A chat announcement's body in the wording `event` has now, naming the player when the event gives only an id. */
  async announcement(event: string, payload: Record<string, unknown>, createdIso: string): Promise<string> {
    const [custom] = await T.select(this.#db, sql`where ${T.c.event} = ${event}`);
    const who = payload.username === undefined ? (payload.accountId ?? payload.userId) : undefined;
    const username = typeof who === 'number' ? await this.#nameOf(who) : undefined;
    return discordMessage(event, username === undefined ? payload : { ...payload, username }, custom ?? wordingFor(event), createdIso);
  }

  async templates(): Promise<TemplateView[]> {
    const custom = new Map((await T.select(this.#db)).map((t) => [t.event, t]));
    const names = [...new Set([...this.#declared().map((e) => e.name), ...Object.keys(BUILT_IN)])];
    return names.map((event) => {
      const own = custom.get(event);
      return { event, title: (own ?? wordingFor(event)).title, body: (own ?? wordingFor(event)).body, custom: own !== undefined };
    });
  }

  async setTemplate(event: string, title: string, body: string): Promise<TemplateView> {
    if (!this.#declared().some((e) => e.name === event)) {
      throw new DomainError('NOTIFICATION_UNKNOWN_EVENT', `event: no feature declares the event "${event}".`);
    }
    await this.#db.transaction(async () => {
      const [before] = await T.select(this.#db, sql`where ${T.c.event} = ${event}`);
      await this.#db.run(sql`delete from ${T} where ${T.c.event} = ${event}`);
      const custom = title !== '' || body !== '';
      if (custom) await T.insert(this.#db, { event, title, body });
      await this.#audit.record({
        action: 'notifications.template.update',
        target: { type: 'template', id: event },
        summary: custom ? `Changed the wording of ${event}` : `Restored the built-in wording of ${event}`,
        before: before && { title: before.title, body: before.body },
        after: custom ? { title, body } : undefined,
      });
    });
    return (await this.templates()).find((t) => t.event === event)!;
  }
}
