import { randomBytes, randomUUID } from 'node:crypto';
import type { Database } from '../../core/db.ts';
import { countParam } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { DeclaredEvent } from '../../core/events.ts';
import { now } from '../../core/format.ts';
import type { AttemptView, DeliveryView, EndpointInput, EndpointView, NotificationsService, TemplateView } from './contract.ts';
import { BUILT_IN, type Wording, wordingFor } from './discord.ts';
import { NotificationsAttempt, NotificationsDelivery, NotificationsEndpoint, NotificationsEvent, NotificationsTemplate } from './entities.ts';

type Endpoint = ReturnType<typeof NotificationsEndpoint.fromRow>;

export const TEST_EVENT = 'notifications.test';

function view(e: Endpoint): EndpointView {
  return { id: e.id, name: e.name, kind: e.kind, url: e.url, secret: e.secret, events: e.events.split(' ').filter(Boolean), active: e.active, createdDate: e.createdDate };
}

export class DbNotificationsService implements NotificationsService {
  readonly #db: Database;
  readonly #declared: () => DeclaredEvent[];
  readonly #cacheMs: number;
  /** Event name → the active endpoints subscribed to it; read on every event, so kept in memory. */
  #subscribers = new Map<string, number[]>();
  #loadedAt = 0;
  #loading: Promise<void> | undefined;
  /** Called after a commit that queued deliveries: the worker looks at the queue at once. */
  onQueued: () => void = () => undefined;

  constructor(db: Database, declared: () => DeclaredEvent[], cacheSeconds: number) {
    this.#db = db;
    this.#declared = declared;
    this.#cacheMs = cacheSeconds * 1000;
  }

  /** Reads the subscriptions again when they are older than the cache allows (another process may have changed them). */
  async refresh(force = false): Promise<void> {
    if (!force && Date.now() - this.#loadedAt < this.#cacheMs) return;
    this.#loading ??= (async () => {
      const active = await NotificationsEndpoint.select(this.#db, 'where active = ?', [1]);
      const next = new Map<string, number[]>();
      for (const e of active) for (const name of view(e).events) next.set(name, [...(next.get(name) ?? []), e.id]);
      this.#subscribers = next;
      this.#loadedAt = Date.now();
    })().finally(() => { this.#loading = undefined; });
    await this.#loading;
  }

  /**
   * Runs inside the emitting transaction (an `onCommitting` listener): the event and its
   * deliveries commit with the change or not at all, so a crash right after the commit loses nothing.
   */
  async enqueue(name: string, payload: unknown): Promise<void> {
    if (Date.now() - this.#loadedAt >= this.#cacheMs) await this.refresh();
    const endpoints = this.#subscribers.get(name);
    if (!endpoints?.length) return;
    await this.#queue(name, payload, endpoints);
  }

  async #queue(name: string, payload: unknown, endpoints: number[]): Promise<number> {
    const at = now();
    const eventId = await NotificationsEvent.insert(this.#db, { messageId: `msg_${randomUUID().replaceAll('-', '')}`, name, payload: JSON.stringify(payload), createdDate: at });
    await NotificationsDelivery.insertMany(this.#db, endpoints.map((endpointId) => ({
      eventId, endpointId, status: 'pending' as const, attempts: 0, nextAttemptDate: at, updatedDate: at,
    })));
    this.#db.afterCommit(() => this.onQueued());
    return eventId;
  }

  async endpoints(): Promise<EndpointView[]> {
    return (await NotificationsEndpoint.select(this.#db, 'order by id')).map(view);
  }

  async endpoint(id: number): Promise<EndpointView> {
    const e = await NotificationsEndpoint.find(this.#db, id);
    if (!e) throw new DomainError('NOTIFICATION_ENDPOINT_NOT_FOUND', `There is no endpoint ${id}.`);
    return view(e);
  }

  #checked(input: Partial<EndpointInput>): Omit<Partial<Endpoint>, 'id'> {
    const known = new Set([...this.#declared().map((e) => e.name)]);
    const unknown = input.events?.find((name) => !known.has(name));
    if (unknown !== undefined) throw new DomainError('NOTIFICATION_UNKNOWN_EVENT', `events: no feature declares the event "${unknown}" (GET /api/admin/notifications/events lists them).`);
    if (input.url !== undefined) {
      let url: URL | undefined;
      try { url = new URL(input.url); } catch { /* refused below */ }
      if (url?.protocol !== 'https:' && url?.protocol !== 'http:') throw new DomainError('VALIDATION_ERROR', 'url: an http or https address is needed.');
    }
    return {
      name: input.name, kind: input.kind, url: input.url, active: input.active,
      events: input.events === undefined ? undefined : [...new Set(input.events)].join(' '),
    };
  }

  async createEndpoint(input: EndpointInput): Promise<EndpointView> {
    const id = await NotificationsEndpoint.insert(this.#db, {
      ...this.#checked(input), secret: `whsec_${randomBytes(24).toString('base64')}`, createdDate: now(),
    });
    await this.refresh(true);
    return this.endpoint(id);
  }

  async updateEndpoint(id: number, input: Partial<EndpointInput>): Promise<EndpointView> {
    await this.endpoint(id);
    await NotificationsEndpoint.update(this.#db, id, this.#checked(input));
    await this.refresh(true);
    return this.endpoint(id);
  }

  async deleteEndpoint(id: number): Promise<void> {
    await this.endpoint(id);
    await this.#db.transaction(async () => {
      await this.#db.run('delete from notifications_attempts where delivery_id in (select id from notifications_deliveries where endpoint_id = ?)', [id]);
      await this.#db.run('delete from notifications_deliveries where endpoint_id = ?', [id]);
      await this.#db.run('delete from notifications_endpoints where id = ?', [id]);
    });
    await this.refresh(true);
  }

  async #views(where: string, params: unknown[]): Promise<DeliveryView[]> {
    const rows = await this.#db.queryArrays(
      `select ${NotificationsDelivery.qualifiedColumns('d')}, e.message_id, e.name, e.created_date from notifications_deliveries d
       join notifications_events e on e.id = d.event_id ${where}`, params);
    if (rows.length === 0) return [];
    const deliveries = rows.map((r) => ({ d: NotificationsDelivery.fromArray(r), rest: r.slice(NotificationsDelivery.width) as string[] }));
    const ids = deliveries.map(({ d }) => d.id);
    const attempts = await NotificationsAttempt.select(this.#db, `where delivery_id in (${ids.map(() => '?').join(', ')}) order by id`, ids);
    const byDelivery = new Map<number, AttemptView[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.deliveryId) ?? [];
      list.push({ startedDate: a.startedDate, durationMs: a.durationMs, status: a.status, response: a.response, error: a.error });
      byDelivery.set(a.deliveryId, list);
    }
    return deliveries.map(({ d, rest: [messageId, event, createdDate] }) => ({
      id: d.id, endpointId: d.endpointId, messageId: messageId!, event: event!, status: d.status,
      attempts: byDelivery.get(d.id) ?? [], nextAttemptDate: d.nextAttemptDate, createdDate: createdDate!,
    }));
  }

  async deliveries(endpointId: number, limit: number): Promise<DeliveryView[]> {
    await this.endpoint(endpointId);
    return this.#views('where d.endpoint_id = ? order by d.id desc limit ?', [endpointId, countParam(limit)]);
  }

  async delivery(id: number): Promise<DeliveryView> {
    const [found] = await this.#views('where d.id = ?', [id]);
    if (!found) throw new DomainError('NOTIFICATION_DELIVERY_NOT_FOUND', `There is no delivery ${id}.`);
    return found;
  }

  async redeliver(id: number): Promise<DeliveryView> {
    await this.delivery(id);
    const at = now();
    // Conditional: a row still queued or being sent is not queued twice.
    const { affectedRows } = await this.#db.run(
      "update notifications_deliveries set status = 'pending', next_attempt_date = ?, updated_date = ? where id = ? and status in ('delivered', 'failed')", [at, at, id]);
    if (affectedRows === 0) throw new DomainError('NOTIFICATION_DELIVERY_QUEUED', `Delivery ${id} is already queued; it goes out by itself.`);
    this.onQueued();
    return this.delivery(id);
  }

  async sendTest(endpointId: number): Promise<DeliveryView> {
    await this.endpoint(endpointId);
    const eventId = await this.#db.transaction(() => this.#queue(TEST_EVENT, { endpointId }, [endpointId]));
    const [delivery] = await this.#views('where d.event_id = ?', [eventId]);
    return delivery!;
  }

  /** The wording a chat announcement of `event` uses now. */
  async wording(event: string): Promise<Wording> {
    const [custom] = await NotificationsTemplate.select(this.#db, 'where event = ?', [event]);
    return custom ?? wordingFor(event);
  }

  async templates(): Promise<TemplateView[]> {
    const custom = new Map((await NotificationsTemplate.select(this.#db)).map((t) => [t.event, t]));
    const names = [...new Set([...this.#declared().map((e) => e.name), ...Object.keys(BUILT_IN)])];
    return names.map((event) => {
      const own = custom.get(event);
      return { event, title: (own ?? wordingFor(event)).title, body: (own ?? wordingFor(event)).body, custom: own !== undefined };
    });
  }

  async setTemplate(event: string, title: string, body: string): Promise<TemplateView> {
    if (!this.#declared().some((e) => e.name === event)) throw new DomainError('NOTIFICATION_UNKNOWN_EVENT', `event: no feature declares the event "${event}".`);
    await this.#db.transaction(async () => {
      await this.#db.run('delete from notifications_templates where event = ?', [event]);
      if (title !== '' || body !== '') await NotificationsTemplate.insert(this.#db, { event, title, body });
    });
    return (await this.templates()).find((t) => t.event === event)!;
  }
}
