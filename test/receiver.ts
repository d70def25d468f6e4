/**
 * A webhook receiver as an endpoint's owner would run one: a real HTTP server on 127.0.0.1 that
 * keeps what arrives and verifies it with the Standard Webhooks library the server signs with.
 * Shared by the notifications feature's tests, the fault suite and the bench.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * Config's `outbound` for a server whose endpoints are these receivers: they listen on 127.0.0.1,
 * which the server calls only when listed, as an owner lists a receiver on their own network.
 */
export const RECEIVERS = { allow: ['127.0.0.1'] };

export interface Received {
  method: string;
  /** The request's path and query. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the request's body had arrived. */
  at: number;
}

/** How the receiver answers the nth request (from 1): a status and how long it waits first. */
export type Answer = (n: number, req: Received) => { status: number; delayMs?: number; body?: string };

export interface Receiver {
  url: string;
  received: Received[];
  /** The distinct webhook-ids received. */
  ids(): Set<string>;
  /** Resolves once `count` requests have arrived (rejects after `ms`). */
  waitFor(count: number, ms?: number): Promise<Received[]>;
  answer: Answer;
  close(): Promise<void>;
}

export async function startReceiver(answer: Answer = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  /** Each waiter looks at what arrived whenever a request arrives, and says whether it is done. */
  const waiters = new Set<() => boolean>();
  const receiver: Receiver = {
    url: '',
    received,
    answer,
    ids: () => new Set(received.map((r) => String(r.headers['webhook-id']))),
    waitFor(count, ms = 15000) {
      if (received.length >= count) return Promise.resolve(received);
      return new Promise<Received[]>((resolve, reject) => {
        const waiter = () => {
          if (received.length < count) return false;
          clearTimeout(limit);
          resolve(received);
          return true;
        };
        const limit = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`expected ${count} requests, ${received.length} arrived within ${ms} ms`));
        }, ms);
        waiters.add(waiter);
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(got);
      for (const w of waiters) if (w()) waiters.delete(w);
      const { status, delayMs = 0, body = '' } = receiver.answer(received.length, got);
      // A slow endpoint is what some tests are about: its answer waits as long as they ask.
      setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain' }).end(body), delayMs).unref();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}

/** What a receiver's owner does with a request: verify it with the endpoint's secret, throwing when it is not genuine or too old. */
export function verified(secret: string, r: Pick<Received, 'headers' | 'body'>): { type: string; timestamp: string; data: Record<string, unknown> } {
  const headers = {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(r.body, headers) as { type: string; timestamp: string; data: Record<string, unknown> };
}

/** The path of a channel's webhook as Discord answers it: `/api/webhooks/<id>/<token>`, an API version and a query allowed. */
const DISCORD_WEBHOOK = /^\/api\/(v\d+\/)?webhooks\/\d+\/[\w-]+\/?(\?.*)?$/;

export interface DiscordRelay extends Receiver {
  /** The body of `POST /api/admin/notifications/endpoints` that subscribes a Discord endpoint here to `events`. */
  endpoint(events: string[], name?: string): { name: string; kind: 'discord'; url: string; events: string[] };
  /** What the server's config needs to post here: this host in `discordHosts`, 127.0.0.1 in `outbound.allow`. */
  config: { outbound: { allow: string[] }; plugins: { notifications: { discordHosts: string[] } } };
}

/**
 * A relay in front of Discord as an owner runs one (config's `plugins.notifications.discordHosts`),
 * on 127.0.0.1: like Discord's webhook address it answers 204 No Content to a POST of a channel's
 * webhook path, and 404 to anything else; `received` keeps every request.
 */
export async function startDiscordRelay(): Promise<DiscordRelay> {
  const receiver = await startReceiver((_n, r) => ({ status: r.method === 'POST' && DISCORD_WEBHOOK.test(r.path) ? 204 : 404 }));
  const { host } = new URL(receiver.url);
  const url = `http://${host}/api/webhooks/123456789012345678/relay-token`;
  return Object.assign(receiver, {
    url,
    endpoint: (events: string[], name = 'Discord relay') => ({ name, kind: 'discord' as const, url, events }),
    config: { outbound: RECEIVERS, plugins: { notifications: { discordHosts: [host] } } },
  });
}
