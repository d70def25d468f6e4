/**
 * The delivery queue's worker. A request writes only its event; a look fans new events out to the
 * subscribed endpoints' deliveries (one process per event: a conditional update of `fanned`), then
 * claims due rows by a conditional update (`pending` → `sending` with a lease), so two server
 * processes never send one row at once; a process killed mid-send leaves a lease that lapses and
 * the row goes out again with the same `webhook-id` (at least once). Outcomes are written in
 * batches by the next look. Each endpoint has its own bound of sends in flight, so a slow or dead
 * one holds only its own slots. While requests keep the process busy, sends yield to them.
 */
import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { cpus } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { RoundLog } from '../../core/background.ts';
import type { Database } from '../../core/db.ts';
import { countParam } from '../../core/db.ts';
import type { TableRecord } from '../../core/table.ts';
import { addSeconds, now, parseTimestamp, toTimestamp } from '../../core/format.ts';
import { empty, join, raw, sql } from '../../core/sql.ts';
import type { EndpointAddresses } from './addresses.ts';
import { NotificationsAttempt, NotificationsDelivery as D, NotificationsEndpoint, NotificationsEvent as E, pendingDelivery } from './entities.ts';

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
  /** How long a wake-up after a commit waits, so that the events of a busy spell are claimed together. */
  batchMs: number;
  /** How often the queue is looked at without a wake-up (rows queued by other processes, retries come due, lapsed leases). */
  pollMs: number;
  /** Sends started per second at most while requests keep this process busy; the rest wait in the queue for the spell to pass. */
  busySendsPerSecond: number;
  /** Days a delivery that ended (delivered or failed) is kept, with its attempts and event; 0 keeps them all. */
  retentionDays: number;
}

type Endpoint = Pick<ReturnType<typeof NotificationsEndpoint.fromRow>, 'id' | 'kind' | 'url' | 'secret'>;
type EventRecord = ReturnType<typeof E.fromRow>;
type Attempt = Omit<TableRecord<typeof NotificationsAttempt>, 'id' | 'deliveryId'>;

interface Claimed {
  id: number;
  endpointId: number;
  eventId: number;
  attempts: number;
  token: string;
}

/** A send that ended: its try, or none when shutdown cut it (the row goes back untried). */
interface Outcome {
  c: Claimed;
  attempt?: Attempt;
}

/** Events fanned out per look at most. */
const FAN_OUT_BATCH = 500;
/** How often ended deliveries past their retention are removed, and how many rows a statement of that removes. */
const SWEEP_MS = 3_600_000;
const SWEEP_BATCH = 1000;
/**
 * The process counts as busy when its event loop, or the machine's CPUs, were this used over the
 * last window while requests went on emitting events; the worker then looks once per window and
 * sends its share. The machine's CPUs count because a database on the same machine (MariaDB) can
 * be what the requests wait for while this process's own loop is not full: there a rush leaves
 * the loop short of full, and sends in its gaps still slow the requests waiting on it.
 */
const BUSY_UTILIZATION = 0.75;
const WINDOW_MS = 250;

/** Another process fanned out some of the same events first: this look's fan-out is undone. */
class FannedElsewhere extends Error {}

export class DeliveryWorker {
  readonly #db: Database;
  readonly #opts: WorkerOptions;
  readonly #rounds: RoundLog;
  readonly #announcement: (event: string, payload: Record<string, unknown>, createdIso: string) => Promise<string>;
  readonly #subscribers: (event: string) => number[];
  readonly #addresses: EndpointAddresses;
  /**
   * Kept-alive connections per origin (a busy endpoint is not a new TCP and TLS handshake per event),
   * each made to an address the outbound policy allows: its lookup leaves the others out.
   */
  readonly #agents: Agents;
  readonly #inFlight = new Map<number, number>();
  readonly #sends = new Set<Promise<void>>();
  readonly #outcomes: Outcome[] = [];
  readonly #stop = new AbortController();
  /** Each endpoint's signer with the secret it was made from: a changed secret replaces it. */
  readonly #signers = new Map<number, { secret: string; signer: Webhook }>();
  #timer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #running = false;
  #again: 'soon' | 'batched' | undefined;
  #scheduled: NodeJS.Timeout | undefined;
  #scheduledSoon = false;
  #lookedAt = 0;
  /** The last look's claim may have left due rows behind (an endpoint without a free slot, or as many rows as slots). */
  #leftBehind = false;
  /** Events this process queued since the last sample, and the event loop's use since then. */
  #arrived = 0;
  #sampledAt = 0;
  #elu = performance.eventLoopUtilization();
  #machine = machineTimes();
  #busy = false;
  /** The last window measured had no events. */
  #quiet = true;
  /** The current window began with the first event after a quiet spell and has not been measured yet. */
  #opening = false;

  constructor(
    db: Database,
    opts: WorkerOptions,
    log: FastifyBaseLogger,
    announcement: (event: string, payload: Record<string, unknown>, createdIso: string) => Promise<string>,
    subscribers: (event: string) => number[],
    addresses: EndpointAddresses,
  ) {
    this.#db = db;
    this.#opts = opts;
    this.#rounds = new RoundLog(log, 'webhook delivery');
    this.#announcement = announcement;
    this.#subscribers = subscribers;
    this.#addresses = addresses;
    const { lookup } = addresses.outbound;
    this.#agents = { http: new HttpAgent({ keepAlive: true, lookup }), https: new HttpsAgent({ keepAlive: true, lookup }) };
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#releaseLapsed().then(
        () => this.wake(),
        (err: unknown) => this.#rounds.failed(err),
      );
    }, this.#opts.pollMs);
    this.#timer.unref();
    if (this.#opts.retentionDays > 0) {
      const sweep = () => {
        this.#sweep().catch((err: unknown) => this.#rounds.failed(err));
      };
      this.#sweepTimer = setInterval(sweep, SWEEP_MS);
      this.#sweepTimer.unref();
      sweep();
    }
    this.wake();
  }

  /** Ends the loop; sends in flight are cut and their rows handed back untried. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    clearInterval(this.#sweepTimer);
    clearTimeout(this.#scheduled);
    this.#stop.abort();
    while (this.#running || this.#sends.size > 0) await Promise.allSettled([...this.#sends, new Promise((r) => setImmediate(r))]);
    this.#agents.http.destroy();
    this.#agents.https.destroy();
    await this.#flush().catch((err: unknown) => this.#rounds.failed(err));
  }

  /**
   * A commit queued an event. The first after a quiet spell (a window without events, or none
   * measured lately) starts a fresh window, which counts as busy as soon as more events arrive in it
   * than a busy window sends: measured over the quiet before it, the loop's use would say idle, and
   * a rush's first window would go out at full speed. A lone event (a test message) goes at once.
   */
  queued(): void {
    const at = performance.now();
    if (this.#arrived === 0 && (this.#quiet || at - this.#sampledAt >= WINDOW_MS)) {
      this.#startWindow(at);
      this.#opening = true;
    }
    this.#arrived++;
    if (this.#opening && this.#arrived > this.#share()) this.#busy = true;
    this.wake();
  }

  /** Sends a busy window starts at most. */
  #share(): number {
    return Math.ceil((this.#opts.busySendsPerSecond * WINDOW_MS) / 1000);
  }

  /**
   * Looks at the queue: within `batchMs` after a commit (the wake-ups of a busy spell share one
   * look), at once when `soon` (a send freed a slot, or the last look left work), and at most once
   * a window while the process is busy.
   */
  wake(soon = false): void {
    if (this.#stop.signal.aborted) return;
    if (this.#running) {
      if (this.#again !== 'soon') this.#again = soon ? 'soon' : 'batched';
      return;
    }
    if (this.#scheduled && (this.#scheduledSoon || !soon)) return;
    clearTimeout(this.#scheduled);
    const wait = this.#busy ? Math.max(0, this.#lookedAt + WINDOW_MS - performance.now()) : soon ? 0 : this.#opts.batchMs;
    this.#scheduledSoon = soon;
    this.#scheduled = setTimeout(() => {
      this.#scheduled = undefined;
      this.#running = true;
      void this.#look();
    }, wait);
  }

  async #look(): Promise<void> {
    this.#again = undefined;
    this.#lookedAt = performance.now();
    let more = false;
    try {
      more = await this.#round();
      this.#rounds.succeeded();
    } catch (err) {
      this.#rounds.failed(err);
    }
    this.#running = false;
    if (more || this.#again) this.wake(more || this.#again === 'soon');
  }

  /** Whether requests keep the process busy: its event loop or the machine nearly full while they go on queuing events. */
  #sample(): void {
    const at = performance.now();
    if (at - this.#sampledAt < WINDOW_MS) return;
    const machine = machineTimes();
    const machineUse = (machine.busy - this.#machine.busy) / Math.max(1, machine.total - this.#machine.total);
    this.#busy = this.#arrived > 0 && (performance.eventLoopUtilization(this.#elu).utilization >= BUSY_UTILIZATION || machineUse >= BUSY_UTILIZATION);
    this.#quiet = this.#arrived === 0;
    this.#opening = false;
    this.#startWindow(at, machine);
  }

  #startWindow(at: number, machine = machineTimes()): void {
    this.#arrived = 0;
    this.#elu = performance.eventLoopUtilization();
    this.#machine = machine;
    this.#sampledAt = at;
  }

  /**
   * Removes deliveries that ended more than `retentionDays` ago, with their attempts, oldest first
   * and a batch per transaction (none holds the database long), then the events no delivery left
   * needs. The walk stops at the first batch of the oldest rows with nothing to remove: rows still
   * retrying stay, and are reached once they end.
   */
  async #sweep(): Promise<void> {
    const cutoff = addSeconds(now(), -this.#opts.retentionDays * 86400);
    let after = 0;
    for (;;) {
      const rows = await this.#db.queryArrays(sql`select ${D.c.id}, ${D.c.status}, ${D.c.updatedDate} from ${D} where ${D.c.id} > ${after}
        order by ${D.c.id} limit ${countParam(SWEEP_BATCH)}`);
      const ended = rows.filter(([, status, at]) => (status === 'delivered' || status === 'failed') && String(at) < cutoff).map(([id]) => Number(id));
      if (ended.length === 0) break;
      await this.#db.transaction(async () => {
        const A = NotificationsAttempt;
        // Conditional: a row redelivered by hand since the read above stays, and so do its tries.
        await this.#db.run(sql`delete from ${D} where ${D.c.id} in ${ended} and ${D.c.status} in ('delivered', 'failed')`);
        await this.#db.run(sql`delete from ${A} where ${A.c.deliveryId} in ${ended}
          and ${A.c.deliveryId} not in (select ${D.c.id} from ${D} where ${D.c.id} in ${ended})`);
      });
      after = Number(rows.at(-1)![0]);
    }
    // Events older than every delivery left, fanned out and past the retention: nothing sends them again.
    for (;;) {
      const { affectedRows } = await this.#db.run(sql`delete from ${E} where ${E.c.id} in (select ${E.c.id} from (select ${E.c.id} from ${E}
        where ${E.c.fanned} = ${1} and ${E.c.createdDate} < ${cutoff}
        and ${E.c.id} < coalesce((select min(${D.c.eventId}) from ${D}), (select max(${E.c.id}) + 1 from ${E}))
        order by ${E.c.id} limit ${countParam(SWEEP_BATCH)}) oldest)`);
      if (affectedRows < SWEEP_BATCH) break;
    }
  }

  /** Rows whose sender died (its lease lapsed) are pending again. */
  async #releaseLapsed(): Promise<void> {
    const at = now();
    await this.#db.run(sql`update ${D} set ${D.c.status} = 'pending', ${D.c.leaseUntil} = null, ${D.c.updatedDate} = ${at}
      where ${D.c.leaseUntil} < ${at} and ${D.c.status} = 'sending'`);
  }

  /** One look: outcomes written, new events fanned out, due rows claimed and sent. Whether work is left. */
  async #round(): Promise<boolean> {
    this.#sample();
    await this.#flush();
    const share = this.#busy ? this.#share() : Infinity;
    const fanLimit = Math.min(share, FAN_OUT_BATCH);
    const fanned = await this.#fanOut(fanLimit);
    const claimed = await this.#claim(share);
    return fanned === fanLimit || claimed === share;
  }

  /** Deliveries for up to `limit` events not yet fanned out, to the endpoints subscribed now; how many events. */
  async #fanOut(limit: number): Promise<number> {
    const events = await E.select(this.#db, sql`where ${E.c.fanned} = ${0} order by ${E.c.id} limit ${countParam(limit)}`);
    if (events.length === 0) return 0;
    const at = now();
    const ids = events.map((e) => e.id);
    const rows = events.flatMap((e) => this.#subscribers(e.name).map((endpointId) => pendingDelivery(e.id, endpointId, at)));
    try {
      await this.#db.transaction(async () => {
        // Conditional: a process that fanned out one of these first wins; this look's writes roll back.
        const { affectedRows } = await this.#db.run(sql`update ${E} set ${E.c.fanned} = ${1} where ${E.c.id} in ${ids} and ${E.c.fanned} = ${0}`);
        if (affectedRows !== ids.length) throw new FannedElsewhere();
        await D.insertMany(this.#db, rows);
      });
    } catch (err) {
      if (!(err instanceof FannedElsewhere)) throw err;
    }
    return events.length;
  }

  /** Claims and sends up to `share` due rows, per endpoint within its free slots; how many. */
  async #claim(share: number): Promise<number> {
    const at = now();
    // Per endpoint with free slots, its first rows due (an index range each): a backlog of a
    // slow endpoint is never read through to find another endpoint's rows.
    // Every endpoint whole (a handful of rows): its id picks its rows, and the record sends them.
    const endpointById = new Map((await NotificationsEndpoint.select(this.#db)).map((e) => [e.id, e]));
    const slots = [...endpointById.keys()].map((endpointId) => ({
      endpointId,
      free: Math.min(this.#opts.concurrency - (this.#inFlight.get(endpointId) ?? 0), share),
    }));
    const open = slots.filter((s) => s.free > 0);
    // One statement: each endpoint's range its own part.
    const parts = open.map(
      ({ endpointId, free }, i) =>
        sql`select ${D.c.id}, ${D.c.endpointId} from (select ${D.c.id}, ${D.c.endpointId} from ${D}
        where ${D.c.endpointId} = ${endpointId} and ${D.c.status} = 'pending' and ${D.c.nextAttemptDate} <= ${at}
        order by ${D.c.nextAttemptDate}, ${D.c.id} limit ${countParam(free)}) ${raw(`due${i}`)}`,
    );
    const due = parts.length ? await this.#db.queryArrays(join(parts, ' union all ')) : [];
    const dueOf = new Map<number, number[]>(open.map((s) => [s.endpointId, []]));
    for (const [id, endpointId] of due) dueOf.get(Number(endpointId))!.push(Number(id));
    const picked = [...dueOf.values()].flat().slice(0, share);
    this.#leftBehind = open.length < slots.length || picked.length < due.length || open.some((s) => dueOf.get(s.endpointId)!.length === s.free);
    if (picked.length === 0) return 0;
    // Conditional: rows another process claimed first are left out, and the token tells which are ours.
    const leaseUntil = addSeconds(at, this.#opts.leaseSeconds);
    const token = randomBytes(16).toString('hex');
    await this.#db.run(sql`update ${D} set ${D.c.status} = 'sending', ${D.c.leaseUntil} = ${leaseUntil}, ${D.c.claim} = ${token},
      ${D.c.updatedDate} = ${at} where ${D.c.id} in ${picked} and ${D.c.status} = 'pending'`);
    const claimed: Claimed[] = (await D.select(this.#db, sql`where ${D.c.id} in ${picked} and ${D.c.claim} = ${token}`)).map((d) => ({
      id: d.id,
      endpointId: d.endpointId,
      eventId: d.eventId,
      attempts: d.attempts,
      token,
    }));
    if (claimed.length === 0) return picked.length;
    for (const c of claimed) this.#inFlight.set(c.endpointId, (this.#inFlight.get(c.endpointId) ?? 0) + 1);
    const events = await E.select(this.#db, sql`where ${E.c.id} in ${[...new Set(claimed.map((c) => c.eventId))]}`);
    const eventById = new Map(events.map((e) => [e.id, e]));
    for (const c of claimed) {
      const send = this.#send(c, eventById.get(c.eventId)!, endpointById.get(c.endpointId)!)
        .catch((err: unknown) => this.#rounds.failed(err))
        .finally(() => {
          this.#sends.delete(send);
          this.#inFlight.set(c.endpointId, (this.#inFlight.get(c.endpointId) ?? 1) - 1);
          // At once when the last look left due rows waiting for this slot; else one look within batchMs,
          // shared by the sends ending together, writes their outcomes.
          this.wake(this.#leftBehind);
        });
      this.#sends.add(send);
    }
    return picked.length;
  }

  async #send(c: Claimed, event: EventRecord, endpoint: Endpoint): Promise<void> {
    const started = Date.now();
    const startedDate = now();
    let status: number | null = null;
    let response = '';
    let error: string | null = null;
    try {
      // An address refused now (made before the rule, or outbound.allow or discordHosts changed): not called at all.
      const refused = this.#addresses.problem(endpoint.kind, endpoint.url);
      if (refused) throw new Error(`Not sent: ${refused.replace(/^url: /, '')}`);
      const { body, headers } = await this.#message(event, endpoint);
      ({ status, response } = await post(endpoint.url, headers, body, this.#stop.signal, this.#opts, this.#agents));
      if (status < 200 || status > 299) error = `The endpoint answered ${status}.`;
    } catch (err) {
      // Shutting down: the row goes back untried rather than counting a failure it did not have.
      if (this.#stop.signal.aborted) {
        this.#outcomes.push({ c });
        return;
      }
      error = describe(err, this.#opts.timeoutMs);
    }
    this.#outcomes.push({ c, attempt: { startedDate, durationMs: Date.now() - started, status, response, error: error?.slice(0, 500) ?? null } });
  }

  /** An endpoint's signer, made again only when its secret changes (making one decodes the secret). */
  #signer({ id, secret }: Endpoint): Webhook {
    const held = this.#signers.get(id);
    if (held?.secret === secret) return held.signer;
    const signer = new Webhook(secret);
    this.#signers.set(id, { secret, signer });
    return signer;
  }

  async #message(event: EventRecord, endpoint: Endpoint): Promise<{ body: string; headers: Record<string, string> }> {
    const created = parseTimestamp(event.createdDate).toISOString();
    const payload = JSON.parse(event.payload) as Record<string, unknown>;
    const body =
      endpoint.kind === 'discord'
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
        'webhook-signature': this.#signer(endpoint).sign(event.messageId, sentAt, body),
      },
    };
  }

  /**
   * The sends that ended since the last look, in one transaction: every try kept, and each row
   * moved only while our lease holds it, one statement per kind of outcome.
   */
  async #flush(): Promise<void> {
    if (this.#outcomes.length === 0) return;
    const done = this.#outcomes.splice(0);
    const at = now();
    const delays = this.#opts.retryDelaysSeconds;
    const groups = new Map<string, { status: string; next: string; lastStatus: number | null; tried: boolean; token: string; ids: number[] }>();
    for (const { c, attempt } of done) {
      const tries = c.attempts + 1;
      const [status, next] = !attempt
        ? ['pending', at]
        : attempt.error === null
          ? ['delivered', at]
          : tries > delays.length
            ? ['failed', at]
            : ['pending', notBefore(delays[tries - 1]!)];
      const group = { status, next, lastStatus: attempt?.status ?? null, tried: attempt !== undefined, token: c.token };
      const key = JSON.stringify(group);
      const known = groups.get(key) ?? { ...group, ids: [] };
      known.ids.push(c.id);
      groups.set(key, known);
    }
    try {
      await this.#db.transaction(async () => {
        const tried = done.flatMap(({ c, attempt }) => (attempt ? [{ deliveryId: c.id, ...attempt }] : []));
        await NotificationsAttempt.insertMany(this.#db, tried);
        for (const g of groups.values()) {
          const counted = g.tried ? sql`, ${D.c.attempts} = ${D.c.attempts} + 1, ${D.c.lastStatus} = ${g.lastStatus}` : empty;
          await this.#db.run(sql`update ${D} set ${D.c.status} = ${g.status}, ${D.c.nextAttemptDate} = ${g.next}, ${D.c.leaseUntil} = null,
            ${D.c.updatedDate} = ${at}${counted} where ${D.c.id} in ${g.ids} and ${D.c.status} = 'sending' and ${D.c.claim} = ${g.token}`);
        }
      });
    } catch (err) {
      this.#outcomes.unshift(...done);
      throw err;
    }
  }
}

/** The machine's CPU time since boot, used and in all, over every core (ms). */
function machineTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of cpus()) {
    const all = times.user + times.nice + times.sys + times.irq + times.idle;
    total += all;
    busy += all - times.idle;
  }
  return { busy, total };
}

/** A stored time at least `seconds` from now: stored times keep whole seconds, so this one is rounded up. */
function notBefore(seconds: number): string {
  return toTimestamp(new Date(Date.now() + seconds * 1000 + 999));
}

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
}

/** A send that had no full answer within the worker's `timeoutMs`. */
class SendTimeout extends Error {}

/**
 * Posts `body` and reads at most `responseBytes` of the answer, failing with SendTimeout past `timeoutMs`.
 * A delivery runs on the cores that serve requests: node:http rather than fetch, and a timer cleared
 * with the answer rather than AbortSignal.timeout, whose timer outlives the send.
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
  { timeoutMs, responseBytes: max }: Pick<WorkerOptions, 'timeoutMs' | 'responseBytes'>,
  agents: Agents,
): Promise<{
  status: number;
  response: string;
}> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const agent = target.protocol === 'https:' ? agents.https : agents.http;
    let timer: NodeJS.Timeout | undefined;
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err);
    };
    const req = send(target, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent, signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, response: Buffer.concat(chunks).subarray(0, max).toString('utf8') });
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size < max) return;
        res.destroy();
        done();
      });
      res.on('end', done);
      res.on('error', fail);
    });
    timer = setTimeout(() => req.destroy(new SendTimeout()), timeoutMs);
    req.on('error', fail);
    req.end(body);
  });
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e instanceof SendTimeout) return `No answer within ${timeoutMs} ms.`;
  return e.cause?.code ? `${e.cause.code}: ${e.cause.message ?? e.message}` : e.message;
}
