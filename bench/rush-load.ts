/**
 * The rush's load generator (bench/rush.ts), in a process of its own on the core the server does
 * not use: reads {url, sequence, connections, seconds} as JSON on stdin and runs autocannon, each
 * connection walking the sequence from a place of its own. A poll's
 * answer is kept on the connection, and the game server's next ack takes the ids it listed, as the
 * official plugin does. A checkout's answer is kept too, and the next completion on the connection
 * is Stripe's signed webhook that its session was paid (bench/rush-stripe.ts). Prints {rps, p99,
 * byKind, p99ByKind, meanByKind, delivered, completed, non2xx} and what was refused as JSON.
 */
import { randomUUID } from 'node:crypto';
import { text } from 'node:stream/consumers';
import autocannon from 'autocannon';
import type { RushItem } from './rush-mix.ts';
import { sessionCompleted, stripeSignature, subscriptionStarted } from './rush-stripe.ts';

/** A connection's own, until it has walked the whole sequence (autocannon then starts it afresh). */
interface Context {
  /** Where in the sequence this walk starts, so the connections do not move in step. */
  offset?: number;
  /** The request on its way, and when it was handed to the connection. */
  item?: RushItem;
  sentAt?: number;
  /** The ids the last poll of each game server token listed. */
  listed?: Map<string, string[]>;
  /** The checkouts answered and not yet completed, oldest first. */
  pending?: Started[];
}

/** A checkout as its answer tells of it: what Stripe's completion names. */
interface Started {
  paymentId: string;
  session: string;
  /** What the player pays, in cents. */
  amount: number;
  /** A monthly package's checkout: `paymentId` is the subscription checkout's reference. */
  subscription?: boolean;
}

const job = JSON.parse(await text(process.stdin)) as { url: string; sequence: RushItem[]; connections: number; seconds: number; firstSubscription?: number };
const byKind: Record<string, number> = {};
/** Refusals by kind and status, to say what a non-2xx was. */
const failed: Record<string, number> = {};
const firstBody: Record<string, string> = {};
/** Each kind's latencies in ms, from the request built to its answer read: which kind makes the p99. */
const latencies: Record<string, number[]> = {};
const p99 = (list: number[]) => list.sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(list.length * 0.99))]!;
let delivered = 0;
/** Gateway checkouts the completion webhook completed: purchases, as the buys on credit are. */
let completed = 0;
/** The console's 303s to a paid test checkout: answered as meant, so not counted as non-2xx. */
let redirects = 0;
let buys = 0;
/** The subscription checkouts' pairs of player and package taken so far in the run (earlier walks took those before firstSubscription). */
let subscriptions = job.firstSubscription ?? 0;

/** Stripe's webhook for the connection's oldest open checkout; with none (a walk that starts at its completion), an event the shop ignores. */
function completion(context: Context, item: RushItem): { headers: Record<string, string>; body: string; path?: string } {
  const started = context.pending?.shift();
  // The testmode variant: staff pay the test checkout in the console, or the seed's paid one again.
  if (item.testPay) return { headers: {}, body: item.body!, path: item.path.replace('@payment', started?.paymentId ?? item.testPay.paid) };
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  // Stripe Tax's VAT, added to the session's total (the tax variant).
  const tax = started && item.tax ? { amount: Math.round((started.amount * item.tax.percent) / 100), country: item.tax.country } : undefined;
  const body = started?.subscription
    ? subscriptionStarted(id, started.session, started.paymentId, `sub_${randomUUID().replaceAll('-', '')}`, started.amount, 'usd')
    : started
      ? sessionCompleted(id, started.session, started.paymentId, started.amount, 'usd', tax)
      : JSON.stringify({ id, object: 'event', type: 'payment_intent.created', data: { object: { id: `pi_${id}`, object: 'payment_intent' } } });
  return { headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignature(body, item.secret!) }, body };
}

/** The request at `position` of this connection's walk, with what it needs filled in at send time. */
function setup(position: number) {
  return (request: Record<string, unknown>, context: Context) => {
    context.offset ??= Math.floor(Math.random() * job.sequence.length);
    const item = job.sequence[(position + context.offset) % job.sequence.length]!;
    context.item = item;
    context.sentAt = performance.now();
    const headers: Record<string, string> = { ...item.headers };
    let body = item.body;
    let path = item.path;
    if (item.kind === 'complete') {
      const sent = completion(context, item);
      Object.assign(headers, sent.headers);
      body = sent.body;
      path = sent.path ?? path;
    }
    if (item.subscribe) {
      const { buyers, packages } = item.subscribe;
      const n = subscriptions++;
      body = body!
        .replace('"@buyer"', JSON.stringify(buyers[n % buyers.length]))
        .replace('"@product"', JSON.stringify(packages[Math.floor(n / buyers.length) % packages.length]));
    }
    if (item.buyers) {
      // Each buy by the next player of the list, so no player's per-player limits are what is measured.
      const buyer = item.buyers[buys % item.buyers.length]!;
      const product = item.products![buys++ % item.products!.length]!;
      body = body!.replace('"@buyer"', JSON.stringify(buyer)).replace('"@product"', JSON.stringify(product));
    }
    if (item.idempotent) headers['idempotency-key'] = randomUUID();
    if (item.kind === 'ack') {
      const ids = context.listed?.get(item.token!) ?? [];
      context.listed?.delete(item.token!);
      body = JSON.stringify({ token: item.token, commands: ids });
    }
    return { ...request, method: item.method, path, headers, body };
  };
}

function onResponse(status: number, body: string, context: Context, headers: Record<string, string | string[]>): void {
  const item = context.item!;
  (latencies[item.kind] ??= []).push(performance.now() - context.sentAt!);
  // The console answers a paid test checkout with a redirect, and says what became of it in its notice.
  if (item.testPay && status === 303) {
    redirects++;
    byKind.complete = (byKind.complete ?? 0) + 1;
    if (/completed/.test(String(headers['set-cookie']))) completed++;
    return;
  }
  if (status < 200 || status >= 300) {
    const what = `${item.kind} ${status}`;
    failed[what] = (failed[what] ?? 0) + 1;
    firstBody[what] ??= body.slice(0, 300);
    return;
  }
  byKind[item.kind] = (byKind[item.kind] ?? 0) + 1;
  if (item.kind === 'poll') {
    context.listed ??= new Map();
    context.listed.set(
      item.token!,
      (JSON.parse(body) as { id: string }[]).map((r) => r.id),
    );
  } else if (item.kind === 'ack') {
    delivered += (JSON.parse(body) as { commands: unknown[] }).commands.length;
  } else if (item.kind === 'checkout' && item.subscribe) {
    const { reference, checkoutURL } = JSON.parse(body) as { reference: string; checkoutURL: string };
    const session = checkoutURL.slice(checkoutURL.lastIndexOf('/') + 1);
    (context.pending ??= []).push({ paymentId: reference, session, amount: item.subscribe.price, subscription: true });
  } else if (item.kind === 'checkout') {
    const { data } = JSON.parse(body) as { data: { paymentID: string; checkoutURL: string; total: string } };
    (context.pending ??= []).push({
      paymentId: data.paymentID,
      session: data.checkoutURL.slice(data.checkoutURL.lastIndexOf('/') + 1),
      amount: Math.round(Number(data.total) * 100),
    });
  } else if (item.kind === 'complete' && ['completed', 'started'].includes((JSON.parse(body) as { data: { result: string } }).data.result)) {
    completed++;
  }
}

const result = await autocannon({
  url: job.url,
  connections: job.connections,
  duration: job.seconds,
  requests: job.sequence.map((_, i) => ({ setupRequest: setup(i), onResponse })) as never,
});
console.log(
  JSON.stringify({
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    byKind,
    failed,
    firstBody,
    p99ByKind: Object.fromEntries(Object.entries(latencies).map(([kind, list]) => [kind, Math.round(p99(list))])),
    meanByKind: Object.fromEntries(Object.entries(latencies).map(([kind, list]) => [kind, Number((list.reduce((a, b) => a + b, 0) / list.length).toFixed(1))])),
    delivered,
    completed,
    subscriptions: subscriptions - (job.firstSubscription ?? 0),
    non2xx: result.non2xx - redirects + result.errors + result.timeouts,
  }),
);
