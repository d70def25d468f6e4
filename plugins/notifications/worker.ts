/**
 * The delivery queue's worker. Rows are claimed by a conditional update (`pending` → `sending`
 * with a lease), so two server processes never send one row at once; a process killed mid-send
 * leaves a lease that lapses and the row goes out again with the same `webhook-id` (at least once).
 * Each endpoint has its own bound of sends in flight, so a slow or dead one holds only its own slots.
 */
import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { RoundLog } from '../../core/background.ts';
import type { Database } from '../../core/db.ts';
import { countParam } from '../../core/db.ts';
import type { TableRecord } from '../../core/table.ts';
import { addSeconds, now, parseTimestamp, toTimestamp } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import { NotificationsAttempt, NotificationsDelivery as D, NotificationsEndpoint, NotificationsEvent } from './entities.ts';

export interface WorkerOptions {
  /** Sends in flight to one endpoint at most. */
  concurrency: number;
  /** A try that has no full answer within this is a failure. */
  timeoutMs: number;
  /** Seconds before each retry; their count is how many retries there are. */
  retryDelaysSeconds: number[];
  /** How long a claimed row stays ours: past it, another process may send it again. */
  leaseSeconds: number;
  /** How much of an answer's body is kept. */
  responseBytes: number;
  /** How long a wake-up waits, so that the events of a busy spell are claimed together. */
  batchMs: number;
  /** How often the queue is looked at without a wake-up (rows queued by other processes, retries come due, lapsed leases). */
  pollMs: number;
}

type Endpoint = Pick<ReturnType<typeof NotificationsEndpoint.fromRow>, 'id' | 'kind' | 'url' | 'secret'>;
type EventRecord = ReturnType<typeof NotificationsEvent.fromRow>;

interface Claimed {
  id: number;
  endpointId: number;
  eventId: number;
  attempts: number;
  token: string;
}


export class DeliveryWorker {
  readonly #db: Database;
  readonly #opts: WorkerOptions;
  readonly #rounds: RoundLog;
  readonly #announcement: (event: string, payload: Record<string, unknown>, createdIso: string) => Promise<string>;
  readonly #inFlight = new Map<number, number>();
  readonly #sends = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #again = false;
  #scheduled: NodeJS.Timeout | undefined;

  constructor(
    db: Database, opts: WorkerOptions, log: FastifyBaseLogger,
    announcement: (event: string, payload: Record<string, unknown>, createdIso: string) => Promise<string>,
  ) {
    this.#db = db;
    this.#opts = opts;
    this.#rounds = new RoundLog(log, 'webhook delivery');
    this.#announcement = announcement;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#releaseLapsed().then(() => this.wake(), (err: unknown) => this.#rounds.failed(err));
    }, this.#opts.pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Ends the loop; sends in flight are cut and their rows handed back untried. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    clearTimeout(this.#scheduled);
    this.#stop.abort();
    while (this.#running || this.#sends.size > 0) await Promise.allSettled([...this.#sends, new Promise((r) => setImmediate(r))]);
  }

  /**
   * Looks at the queue within `batchMs` (after a commit that queued rows, or a send that freed a
   * slot): the wake-ups of a busy spell share one look, which claims their rows together.
   */
  wake(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#running || this.#scheduled) {
      this.#again = true;
      return;
    }
    this.#scheduled = setTimeout(() => {
      this.#scheduled = undefined;
      this.#running = true;
      void this.#look();
    }, this.#opts.batchMs);
  }

  async #look(): Promise<void> {
    this.#again = false;
    try {
      await this.#round();
      this.#rounds.succeeded();
    } catch (err) {
      this.#rounds.failed(err);
    }
    this.#running = false;
    if (this.#again) this.wake();
  }

  /** Rows whose sender died (its lease lapsed) are pending again. */
  async #releaseLapsed(): Promise<void> {
    const at = now();
    await this.#db.run(sql`update ${D} set ${D.c.status} = 'pending', ${D.c.leaseUntil} = null, ${D.c.updatedDate} = ${at}
      where ${D.c.status} = 'sending' and ${D.c.leaseUntil} < ${at}`);
  }

  async #round(): Promise<void> {
    const at = now();
    // Per endpoint with free slots, its first rows due (an index range each): a backlog of a
    // slow endpoint is never read through to find another endpoint's rows.
    const endpointIds = (await this.#db.queryArrays(sql`select ${NotificationsEndpoint.c.id} from ${NotificationsEndpoint}`)).map((r) => Number(r[0]));
    const picked: number[] = [];
    for (const endpointId of endpointIds) {
      const free = this.#opts.concurrency - (this.#inFlight.get(endpointId) ?? 0);
      if (free <= 0) continue;
      const due = await this.#db.queryArrays(sql`select ${D.c.id} from ${D}
        where ${D.c.endpointId} = ${endpointId} and ${D.c.status} = 'pending' and ${D.c.nextAttemptDate} <= ${at}
        order by ${D.c.nextAttemptDate}, ${D.c.id} limit ${countParam(free)}`);
      for (const [id] of due) picked.push(Number(id));
    }
    if (picked.length === 0) return;
    // Conditional: rows another process claimed first are left out, and the token tells which are ours.
    const leaseUntil = addSeconds(at, this.#opts.leaseSeconds);
    const token = randomBytes(16).toString('hex');
    await this.#db.run(sql`update ${D} set ${D.c.status} = 'sending', ${D.c.leaseUntil} = ${leaseUntil}, ${D.c.claim} = ${token},
      ${D.c.updatedDate} = ${at} where ${D.c.id} in ${picked} and ${D.c.status} = 'pending'`);
    const claimed: Claimed[] = (await D.select(this.#db, sql`where ${D.c.id} in ${picked} and ${D.c.claim} = ${token}`)).map((d) => ({
      id: d.id, endpointId: d.endpointId, eventId: d.eventId, attempts: d.attempts, token,
    }));
    for (const c of claimed) this.#inFlight.set(c.endpointId, (this.#inFlight.get(c.endpointId) ?? 0) + 1);
    if (claimed.length === 0) return;
    const ids = (list: number[]) => [...new Set(list)];
    const eventIds = ids(claimed.map((c) => c.eventId));
    const [events, endpoints] = await Promise.all([
      NotificationsEvent.select(this.#db, sql`where ${NotificationsEvent.c.id} in ${eventIds}`),
      NotificationsEndpoint.select(this.#db, sql`where ${NotificationsEndpoint.c.id} in ${ids(claimed.map((c) => c.endpointId))}`),
    ]);
    const eventById = new Map(events.map((e) => [e.id, e]));
    const endpointById = new Map(endpoints.map((e) => [e.id, e]));
    for (const c of claimed) {
      const send = this.#send(c, eventById.get(c.eventId)!, endpointById.get(c.endpointId)!)
        .catch((err: unknown) => this.#rounds.failed(err))
        .finally(() => {
          this.#sends.delete(send);
          this.#inFlight.set(c.endpointId, (this.#inFlight.get(c.endpointId) ?? 1) - 1);
          this.wake();
        });
      this.#sends.add(send);
    }
  }

  async #send(c: Claimed, event: EventRecord, endpoint: Endpoint): Promise<void> {
    const started = Date.now();
    const startedDate = now();
    let status: number | null = null;
    let response = '';
    let error: string | null = null;
    try {
      const { body, headers } = await this.#message(event, endpoint);
      const signal = AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#opts.timeoutMs)]);
      ({ status, response } = await post(endpoint.url, headers, body, signal, this.#opts.responseBytes));
      if (status < 200 || status > 299) error = `The endpoint answered ${status}.`;
    } catch (err) {
      if (this.#stop.signal.aborted) {
        // Shutting down: the row goes back untried rather than counting a failure it did not have.
        await this.#db.run(sql`update ${D} set ${D.c.status} = 'pending', ${D.c.leaseUntil} = null
          where ${D.c.id} = ${c.id} and ${D.c.status} = 'sending' and ${D.c.claim} = ${c.token}`);
        return;
      }
      error = describe(err, this.#opts.timeoutMs);
    }
    await this.#record(c, { startedDate, durationMs: Date.now() - started, status, response, error });
  }

  async #message(event: EventRecord, endpoint: Endpoint): Promise<{ body: string; headers: Record<string, string> }> {
    const created = parseTimestamp(event.createdDate).toISOString();
    const payload = JSON.parse(event.payload) as Record<string, unknown>;
    const body = endpoint.kind === 'discord'
      ? await this.#announcement(event.name, payload, created)
      : JSON.stringify({ type: event.name, timestamp: created, data: payload });
    const sentAt = new Date();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'community-platform-webhooks',
        'webhook-id': event.messageId,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': new Webhook(endpoint.secret).sign(event.messageId, sentAt, body),
      },
    };
  }

  /** The try is kept whatever happens to the row; the row moves only while our lease holds it. */
  async #record(c: Claimed, attempt: Omit<TableRecord<typeof NotificationsAttempt>, 'id' | 'deliveryId'>): Promise<void> {
    const tries = c.attempts + 1;
    const delays = this.#opts.retryDelaysSeconds;
    const at = now();
    await this.#db.transaction(async () => {
      await NotificationsAttempt.insert(this.#db, { deliveryId: c.id, ...attempt, error: attempt.error?.slice(0, 500) ?? null });
      const [status, next] = attempt.error === null ? ['delivered', at]
        : tries > delays.length ? ['failed', at] : ['pending', notBefore(delays[tries - 1]!)];
      await this.#db.run(sql`update ${D} set ${D.c.status} = ${status}, ${D.c.attempts} = ${tries}, ${D.c.nextAttemptDate} = ${next},
        ${D.c.lastStatus} = ${attempt.status}, ${D.c.leaseUntil} = null, ${D.c.updatedDate} = ${at}
        where ${D.c.id} = ${c.id} and ${D.c.status} = 'sending' and ${D.c.claim} = ${c.token}`);
    });
  }
}

/** A stored time at least `seconds` from now: stored times keep whole seconds, so this one is rounded up. */
function notBefore(seconds: number): string {
  return toTimestamp(new Date(Date.now() + seconds * 1000 + 999));
}

/** Kept-alive connections per origin: a busy endpoint is not a new TCP (and TLS) handshake per event. */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/**
 * Posts `body` and reads at most `max` bytes of the answer (the rest is not read). node:http
 * rather than fetch: a delivery runs on the cores that serve requests, and fetch costs more per call.
 */
function post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal, max: number): Promise<{ status: number; response: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const agent = target.protocol === 'https:' ? agents.https : agents.http;
    const req = send(target, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent, signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => resolve({ status: res.statusCode ?? 0, response: Buffer.concat(chunks).subarray(0, max).toString('utf8') });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size < max) return;
        res.destroy();
        done();
      });
      res.on('end', done);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || (e.name === 'AbortError' && (e.cause as { name?: string } | undefined)?.name === 'TimeoutError')) {
    return `No answer within ${timeoutMs} ms.`;
  }
  return e.cause?.code ? `${e.cause.code}: ${e.cause.message ?? e.message}` : e.message;
}
