/**
 * The baseline's webhook sends (BENCH_BASE_WEBHOOKS=1, the rush): a relay as a careful hand-written
 * server would run one. A write's events are in its own transaction (base-db.ts, `outbox`, marked
 * as the baseline's own so the server's worker leaves them); a loop reads them in id order, posts
 * each to every active endpoint subscribed to it (signed with Standard Webhooks, kept-alive
 * connections), then marks the batch sent in one statement. It starts at most as many sends a
 * second as the server's worker does while requests keep it busy (`busySendsPerSecond`, 100).
 */
import { Agent, request } from 'node:http';
import { Agent as TlsAgent, request as tlsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { type BaseDb, BASELINE_OUTBOX, type Row } from './base-db.ts';

const SENDS_PER_SECOND = 100;
const WINDOW_MS = 250;

interface Endpoint {
  id: number;
  kind: string;
  url: string;
  hook: Webhook;
  events: Set<string>;
}

export class BaseWebhooks {
  readonly #db: BaseDb;
  readonly #agent = new Agent({ keepAlive: true });
  readonly #tlsAgent = new TlsAgent({ keepAlive: true });
  #endpoints: Endpoint[] = [];
  #rows: Row[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(db: BaseDb) {
    this.#db = db;
  }

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = true;
      this.#window()
        .catch((err: unknown) => console.error('baseline webhooks:', err))
        .finally(() => {
          this.#running = false;
        });
    }, WINDOW_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#agent.destroy();
    this.#tlsAgent.destroy();
  }

  /** The endpoints, with their signers made again only when the database's list was read again. */
  async #active(): Promise<Endpoint[]> {
    const rows = await this.#db.endpoints();
    if (rows !== this.#rows) {
      this.#rows = rows;
      this.#endpoints = rows.map((r) => ({
        id: Number(r.id),
        kind: String(r.kind),
        url: String(r.url),
        hook: new Webhook(String(r.secret)),
        events: new Set(String(r.events).split(' ')),
      }));
    }
    return this.#endpoints;
  }

  /** A window's share of events: each sent to its endpoints, then all marked sent at once. */
  async #window(): Promise<void> {
    const endpoints = await this.#active();
    const share = Math.ceil((SENDS_PER_SECOND * WINDOW_MS) / 1000 / Math.max(1, endpoints.length));
    const events = await this.#db.all('select id, message_id, name, payload, created_date from notifications_events where fanned = ? order by id limit ?', [
      BASELINE_OUTBOX,
      share,
    ]);
    if (events.length === 0) return;
    await Promise.all(
      events.flatMap((e) =>
        endpoints
          .filter((endpoint) => endpoint.events.has(String(e.name)))
          .map((endpoint) => this.#send(endpoint, String(e.message_id), this.#body(endpoint, e))),
      ),
    );
    const ids = events.map((e) => Number(e.id));
    await this.#db.all(`update notifications_events set fanned = 1 where id in (${ids.map(() => '?').join(', ')})`, ids);
  }

  #body(endpoint: Endpoint, e: Record<string, unknown>): string {
    const timestamp = `${String(e.created_date).replace(' ', 'T')}.000Z`;
    if (endpoint.kind === 'discord') return JSON.stringify({ content: `${String(e.name)} at ${timestamp}` });
    return `{"type":${JSON.stringify(e.name)},"timestamp":"${timestamp}","data":${String(e.payload)}}`;
  }

  #send(endpoint: Endpoint, id: string, body: string): Promise<number> {
    const sentAt = new Date();
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': endpoint.hook.sign(id, sentAt, body),
    };
    return new Promise((resolve) => {
      const tls = endpoint.url.startsWith('https:');
      const req = (tls ? tlsRequest : request)(endpoint.url, { method: 'POST', headers, agent: tls ? this.#tlsAgent : this.#agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(body);
    });
  }
}
