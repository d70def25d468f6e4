/**
 * A direct purchase whose server is SIGKILLed between the gateway's webhook and the answer, for the
 * fault suite: the gateway is the example one (examples/examplepay-gateway: HMAC-signed webhooks,
 * no network), the shop one product with stock and a purchase command.
 */
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection, type Connection } from 'mysql2/promise';
import { api } from './storm.ts';

export const EXAMPLEPAY_SECRET = 'fault-suite-examplepay-secret';

/** A config file enabling the example gateway and delivery, in `dir`. */
export function checkoutConfig(dir: string): string {
  const file = join(dir, 'checkout.json');
  writeFileSync(file, JSON.stringify({ plugins: { examplepay: { enabled: true }, delivery: { enabled: true } } }));
  return file;
}

/** One product with `stock` units and a purchase command naming its order. */
export async function seedShop(base: string, stock: number): Promise<string> {
  const ok = (r: { status: number; json: any }, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const category = ok(await api(base, '/api/admin/store/categories', { name: 'Items' }), 'category');
  const product = ok(await api(base, '/api/admin/store/products', { categoryID: category.id, name: 'Key', price: '2.50', stock: String(stock) }), 'product');
  const server = ok(await api(base, '/api/admin/delivery/servers', { name: 'Survival' }), 'server');
  ok(
    await api(base, `/api/admin/store/products/${product.id}/commands`, {
      serverID: String(server.id),
      command: 'give {username} key #{orderID}',
      trigger: 'purchase',
    }),
    'command',
  );
  return String(product.id);
}

/** A guest's purchase of one unit through the public route (urlencoded, as a form would send it). */
export async function startPurchase(base: string, productId: string, guestName: string): Promise<string> {
  const res = await api(base, '/api/payments/purchase', {
    gateway: 'examplepay',
    guestName,
    'lines[0][productID]': productId,
    'lines[0][quantity]': '1',
    returnURL: 'https://play.example.com/thanks',
    cancelURL: 'https://play.example.com/basket',
  });
  if (res.status !== 200) throw new Error(`purchase: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.data.paymentID as string;
}

/** ExamplePay's signed "paid" webhook; rejects when the connection is cut. */
export async function paidWebhook(base: string, eventId: string, paymentID: string): Promise<{ status: number; result?: string }> {
  const payload = JSON.stringify({ id: eventId, type: 'payment.succeeded', paymentID, amount: 250, currency: 'USD' });
  const res = await fetch(`${base}/api/payments/webhooks/examplepay`, {
    method: 'POST',
    body: payload,
    signal: AbortSignal.timeout(10_000),
    headers: { 'content-type': 'application/json', 'x-examplepay-signature': createHmac('sha256', EXAMPLEPAY_SECRET).update(payload).digest('hex') },
  });
  const body = (await res.json()) as { data?: { result?: string } };
  return { status: res.status, result: body.data?.result };
}

/** Holds the product's row lock, so a completing webhook stops at its last statement (the stock take), everything else written. */
export async function holdStock(databaseUrl: string, productId: string): Promise<{ waiting(): Promise<boolean>; release(): Promise<void> }> {
  const conn: Connection = await createConnection({ uri: databaseUrl });
  await conn.query('start transaction');
  await conn.query('select stock from store_products where id = ? for update', [productId]);
  return {
    async waiting() {
      // The stock take blocked behind the held row (innodb_trx need not call such a wait LOCK WAIT).
      // The statement's text as the sql tag writes it: names quoted.
      const [rows] = await conn.query(
        "select count(*) as n from information_schema.processlist where id <> connection_id() and info like 'update " + "`store_products` set `stock`%'",
      );
      return Number((rows as { n: number }[])[0]!.n) > 0;
    },
    async release() {
      await conn.query('rollback');
      await conn.end();
    },
  };
}

/** What the purchases left: orders, queued commands and events per payment, the stock. */
export async function checkoutState(
  databaseUrl: string,
  productId: string,
): Promise<{ orders: Record<string, number>; commands: number; stock: number; statuses: Record<string, string> }> {
  const conn = await createConnection({ uri: databaseUrl });
  try {
    const q = async (sql: string, params: unknown[] = []) => (await conn.query(sql, params))[0] as Record<string, any>[];
    const orders = Object.fromEntries(
      (await q("select payment_id, count(*) as n from store_orders where type = 'payment' group by " + 'payment_id')).map((r) => [r.payment_id, Number(r.n)]),
    );
    const [commands] = await q('select count(*) as n from delivery_queue');
    const [product] = await q('select stock from store_products where id = ?', [productId]);
    const statuses = Object.fromEntries((await q('select id, status from payments_payments')).map((r) => [r.id, r.status]));
    return { orders, commands: Number(commands!.n), stock: Number(product!.stock), statuses };
  } finally {
    await conn.end();
  }
}
