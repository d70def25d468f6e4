/**
 * Players paying real money during the fault storm, through the example gateway
 * (examples/examplepay-gateway): each payment's signed webhook arrives three times at once, twice
 * as the same event and once as a second event saying the same, as gateways do when they retry;
 * and the check that every payment was credited once.
 */
import { createHmac } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { api, type World } from './storm.ts';

export const EXAMPLEPAY_SECRET = 'fault-suite-examplepay-secret';
/** The config that turns the example gateway on (its secret goes in EXAMPLEPAY_SECRET); a package of the workspace, found by its name. */
export const EXAMPLEPAY_PLUGIN = { examplepay: { enabled: true } };

export interface PaymentOutcome {
  paymentID: string;
  /** Each webhook delivery's answer: a result (`completed`, `duplicate`, `unchanged`), or the status that cut it off. */
  answers: string[];
}

async function deliver(base: string, event: Record<string, unknown>): Promise<string> {
  const payload = JSON.stringify(event);
  try {
    const res = await fetch(`${base}/api/payments/webhooks/examplepay`, {
      method: 'POST',
      body: payload,
      signal: AbortSignal.timeout(10_000),
      headers: { 'content-type': 'application/json', 'x-examplepay-signature': createHmac('sha256', EXAMPLEPAY_SECRET).update(payload).digest('hex') },
    });
    const body = (await res.json()) as { data?: { result?: string } };
    return res.status === 200 ? String(body.data?.result) : String(res.status);
  } catch {
    return '0';
  }
}

/** Two payers until `until` resolves: a checkout each time, then its webhook three times at once; each outcome pushed to `out` as it comes. */
export async function payers(base: () => string, world: World, until: Promise<unknown>, out: PaymentOutcome[] = []): Promise<PaymentOutcome[]> {
  let done = false;
  void until.then(() => {
    done = true;
  });
  await Promise.all(
    [0, 1].map(async (w) => {
      for (let i = 0; !done; i++) {
        const username = world.users[(w + i) % world.users.length]!;
        const checkout = await api(base(), '/api/payments/checkout', {
          username,
          amount: '2.00',
          gateway: 'examplepay',
          returnURL: 'https://play.example.com/ok',
          cancelURL: 'https://play.example.com/no',
        }).catch(() => undefined);
        if (checkout?.status !== 200) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        const paymentID = String(checkout.json.data.paymentID);
        const event = { type: 'payment.succeeded', paymentID, amount: 200, currency: 'USD' };
        const answers = await Promise.all([
          deliver(base(), { id: `evt_${paymentID}`, ...event }),
          deliver(base(), { id: `evt_${paymentID}`, ...event }),
          deliver(base(), { id: `evt_${paymentID}_again`, ...event }),
        ]);
        out.push({ paymentID, answers });
      }
    }),
  );
  return out;
}

/** No payment credited twice; every one answered `completed` is completed, with one order and one credit. */
export async function checkPayments(databaseUrl: string, outcomes: PaymentOutcome[]): Promise<{ problems: string[]; counts: Record<string, number> }> {
  const conn = await createConnection({ uri: databaseUrl });
  const problems: string[] = [];
  const q = async (sql: string) => (await conn.query(sql))[0] as Record<string, any>[];
  try {
    for (const o of outcomes) {
      if (o.answers.filter((a) => a === 'completed').length > 1)
        problems.push(`payment ${o.paymentID} answered completed ` + `${o.answers.filter((a) => a === 'completed').length} times`);
    }
    const completed = new Set((await q("select id from payments_payments where status = 'completed'")).map((r) => String(r.id)));
    for (const o of outcomes)
      if (o.answers.includes('completed') && !completed.has(o.paymentID)) problems.push(`payment ${o.paymentID} answered completed but is not`);
    const orders = await q("select payment_id, count(*) as n from store_orders where type = 'payment' group by payment_id");
    for (const r of orders) if (Number(r.n) !== 1) problems.push(`payment ${r.payment_id} has ${r.n} orders`);
    const [credits] = await q("select count(*) as n from credits_ledger where reason = 'payment'");
    if (Number(credits!.n) !== completed.size || orders.length !== completed.size) {
      problems.push(`${completed.size} completed payments but ${orders.length} payment orders and ${credits!.n} payment credits`);
    }
    return { problems, counts: { payments: outcomes.length, completed: completed.size, webhooks: outcomes.length * 3 } };
  } finally {
    await conn.end();
  }
}
