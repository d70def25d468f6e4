/**
 * The outbox across processes: two servers on one database send each message once (the claim is
 * a conditional update), and a server killed in the middle of a send leaves its message to the
 * next one, which sends it when the claim's lease runs out.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { PASSWORD } from '../../../test/browser.ts';
import { makeCategory, makeProduct, newUser } from '../../../test/fixtures.ts';
import { ADMIN_KEY, build, call, scratchDir, sharedDatabaseUrl, startServer } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { fields, sql } from '../../../core/sql.ts';
import { EmailOutbox } from '../entities.ts';

const O = EmailOutbox.c;

const SITE = 'http://shop.example.org';

async function until(ok: () => boolean | Promise<boolean>, what: string, ms = 20000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The config of both servers, in a file for the one started as its own process. */
function configFile(t: Parameters<typeof scratchDir>[0], config: unknown): string {
  const file = join(scratchDir(t), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

t.test('two server processes on one database send each receipt once', async (t) => {
  const smtp = await new TestSmtp().start(t);
  smtp.delayMs = 10;
  const databaseUrl = await sharedDatabaseUrl(t);
  const config = { plugins: { email: smtp.config({ pollMs: 10 }), storefront: { publicUrl: SITE } } };
  const a = await build(t, { databaseUrl, config });
  await a.ready();
  await startServer(t, { DATABASE_URL: databaseUrl, CONFIG: configFile(t, config), API_KEY: ADMIN_KEY });
  const ranks = await makeCategory(a, { name: 'Ranks', slug: 'ranks' });
  const kit = await makeProduct(a, { categoryID: ranks, name: 'Kit', price: '1.00' });
  const ORDERS = 30;
  for (let i = 0; i < ORDERS; i++) {
    const buyer = await newUser(a, `buyer${i}`, { cents: 100 });
    t.equal((await call(a, '/api/store/buy', { body: { userID: buyer.id, products: [kit] }, as: 'json' })).statusCode, 200);
  }
  await until(
    async () => (await a.db.query(sql`select ${fields({ id: O.id })} from ${EmailOutbox} where ${O.state} = 'sent'`)).length === ORDERS,
    'every receipt sent',
  );
  const subjects = smtp.received.map((m) => m.subject);
  t.equal(subjects.length, ORDERS, 'as many mails as orders');
  t.equal(new Set(subjects).size, ORDERS, "no order's receipt twice");
  t.same(await a.db.query(sql`select distinct ${fields({ attempts: O.attempts })} from ${EmailOutbox}`), [{ attempts: 1 }], 'each claimed once');
});

t.test('a server killed while sending: the message goes out from the next one after the lease', async (t) => {
  const smtp = await new TestSmtp().start(t);
  smtp.stall = true;
  const databaseUrl = await sharedDatabaseUrl(t);
  const email = smtp.config({ requireVerification: true, pollMs: 50 });
  (email.smtp as Record<string, unknown>).timeoutMs = 1000;
  const config = { plugins: { email, storefront: { publicUrl: SITE } } };
  const server = await startServer(t, { DATABASE_URL: databaseUrl, CONFIG: configFile(t, config), API_KEY: ADMIN_KEY });
  const res = await fetch(`${server.address}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': ADMIN_KEY },
    body: JSON.stringify({ username: 'Steve', password: PASSWORD, email: 'steve@example.org', ip: '10.9.0.1', useragent: 't' }),
  });
  t.equal(res.status, 200, await res.clone().text());
  await until(() => smtp.stalled === 1, 'the send to begin');
  server.child.kill('SIGKILL');
  await new Promise((resolve) => server.child.once('exit', resolve));

  smtp.stall = false;
  const app = await build(t, { databaseUrl, config });
  await app.ready();
  const mail = await smtp.waitFor((m) => /Confirm/.test(m.subject), 20000);
  t.same(mail.to, ['steve@example.org'], 'the verification mail arrived after the restart');
  const [row] = await EmailOutbox.select(app.db);
  t.match(row, { attempts: 2 }, 'the killed attempt counts');
  const path = new RegExp(`${SITE}(/verify/[0-9a-f]+)`).exec(mail.text)![1]!;
  t.equal((await new Visitor(app).get(path)).statusCode, 303, 'and its link works');
  t.equal((await call(app, '/api/users?username=Steve')).json().isVerified, '1');
});
