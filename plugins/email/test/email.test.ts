/**
 * Email through a real SMTP server: receipts of an order and of a top-up, a staff answer to a
 * ticket's owner, a password reset whose mailed link works once in the storefront, email
 * verification at registration, each also as HTML with what people wrote escaped, retries after
 * refusals shown in the console, and nothing at all without SMTP.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import nock from 'nock';
import t, { type Test } from 'tap';
import { STRIPE_ENV, mockStripeSession, sessionCompleted, stripeWebhook } from '../../../test/gateways.ts';
import { authRef } from '../../auth/contract.ts';
import { grant, PASSWORD, register, role, signInByForm } from '../../../test/browser.ts';
import { makeCategory, makeProduct, newUser, read, rowCount } from '../../../test/fixtures.ts';
import { build, call, scratchDir, sharedDatabaseUrl } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { fields, sql } from '../../../core/sql.ts';
import { EmailOutbox, EmailToken } from '../entities.ts';

const O = EmailOutbox.c;
const outbox = (app: FastifyInstance) => EmailOutbox.select(app.db, sql`order by ${O.id}`);
const tokens = (app: FastifyInstance) => EmailToken.select(app.db, sql`order by ${EmailToken.c.id}`);

const SITE = 'http://shop.example.org';

async function mailApp(
  t: Test,
  smtp: TestSmtp,
  email: Record<string, unknown> = {},
  env: Record<string, string> = {},
  databaseUrl?: string,
): Promise<FastifyInstance> {
  return build(t, { config: { plugins: { email: smtp.config(email), storefront: { publicUrl: SITE } } }, env, databaseUrl });
}

/** A player's own registration through the API, from an address of their own (the register limit counts per address). */
const signUp = (app: FastifyInstance, username: string, ip: string) =>
  call(app, '/api/auth/register', { body: { username, password: PASSWORD, email: `${username.toLowerCase()}@example.org`, ip, useragent: 't' } });

const linkIn = (text: string, path: string) => {
  const found = new RegExp(`${SITE}(${path}[0-9a-f]+)`).exec(text);
  if (!found) throw new Error(`no ${path} link in: ${text}`);
  return found[1]!;
};

t.test('an order receipt, a top-up receipt and a staff answer reach the player', async (t) => {
  nock.disableNetConnect();
  t.teardown(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp, {}, STRIPE_ENV);
  const steve = await newUser(app, 'Steve', { cents: 5000 });
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP rank', price: '12.50' });

  const bought = await call(app, '/api/store/buy', { body: { userID: steve.id, products: [{ id: vip, quantity: 2 }] }, as: 'json' });
  t.equal(bought.statusCode, 200, bought.body);
  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.same(receipt.to, ['steve@example.com']);
  t.equal(receipt.from, 'store@example.org');
  t.match(receipt.subject, /^Your order #\d+ at Community Store$/);
  t.match(receipt.text, /Hello Steve,/);
  t.match(receipt.text, /2 × VIP rank/);
  t.match(receipt.text, /Total: \$25\.00/);
  t.match(receipt.text, new RegExp(`${SITE}/account/orders/\\d+`), "it links to the order's page");

  mockStripeSession('cs_mail');
  const checkout = await call(app, '/api/payments/checkout', {
    body: { gateway: 'stripe', username: 'Steve', amount: '4.20', returnURL: 'https://play.example.com/ok', cancelURL: 'https://play.example.com/no' },
  });
  t.equal(checkout.statusCode, 200, checkout.body);
  const paymentId = checkout.json().data.paymentID as string;
  t.equal((await stripeWebhook(app, sessionCompleted('evt_mail', paymentId, 'cs_mail', 420))).statusCode, 200);
  const topUp = await smtp.waitFor((m) => /top-up/.test(m.subject));
  t.same(topUp.to, ['steve@example.com']);
  t.match(topUp.text, /your payment of \$4\.20 has arrived/);
  t.match(topUp.text, /\$4\.20 were added to your balance/);
  t.notOk(
    smtp.received.some((m) => m !== topUp && /order/i.test(m.subject) && m !== receipt),
    "the top-up's payment order sends no order receipt",
  );

  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Questions' } })).json();
  const staff = await newUser(app, 'Helper');
  const opened = await call(app, '/api/support/tickets', {
    body: { userID: steve.id, categoryID: category.id, title: 'Where is my rank?', message: 'I paid.' },
  });
  const ticket = opened.json().data;
  await call(app, `/api/support/tickets/${ticket.id}/messages`, { body: { userID: steve.id, message: 'Still nothing.' } });
  const answered = await call(app, `/api/support/tickets/${ticket.id}/messages`, {
    body: { userID: staff.id, message: 'Rejoin the server, it is given on join.', isAdmin: '1' },
  });
  t.equal(answered.statusCode, 200, answered.body);
  const reply = await smtp.waitFor((m) => /ticket/.test(m.subject));
  t.same(reply.to, ['steve@example.com'], "the ticket's owner is told, not the staff member");
  t.equal(reply.subject, 'New answer to your ticket “Where is my rank?”');
  t.match(reply.text, /Rejoin the server, it is given on join\./);
  t.match(reply.text, `${SITE}/account/tickets/${ticket.id}`);
  t.equal(smtp.received.length, 3, "the player's own message sent nothing");
  await waitUntil(async () => (await app.db.query(sql`select ${fields({ id: O.id })} from ${EmailOutbox} where ${O.state} = 'sent'`)).length === 3);
  t.match(await app.db.query(sql`select ${fields({ state: O.state, attempts: O.attempts })} from ${EmailOutbox} order by ${O.id}`), [
    { state: 'sent', attempts: 1 },
    { state: 'sent', attempts: 1 },
    { state: 'sent', attempts: 1 },
  ]);
});

t.test('each mail goes as HTML too: what players and staff wrote is escaped, addresses are links', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp);
  const steve = await newUser(app, 'Steve', { cents: 5000 });
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const odd = await makeProduct(app, { categoryID: ranks, name: 'Sword <b>&</b> "Shield"', price: '1.00' });
  t.equal((await call(app, '/api/store/buy', { body: { userID: steve.id, products: [{ id: odd, quantity: 1 }] }, as: 'json' })).statusCode, 200);
  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.match(receipt.text, '1 × Sword <b>&</b> "Shield"', 'the text part keeps the name as written');
  t.match(receipt.html, /^<!doctype html>\n<html lang="en">/);
  t.match(receipt.html, '<title>Your order #');
  t.match(receipt.html, 'Sword &lt;b&gt;&amp;&lt;/b&gt; &quot;Shield&quot;', 'the HTML part escapes it');
  t.notMatch(receipt.html, '<b>&</b>');
  t.match(receipt.html, new RegExp(`<a href="${SITE}/account/orders/\\d+">${SITE}/account/orders/\\d+</a>`), "the order's page is a link");

  const category = (await call(app, '/api/admin/support/categories', { body: { name: 'Questions' } })).json();
  const staff = await newUser(app, 'Helper');
  const ticket = (
    await call(app, '/api/support/tickets', {
      body: { userID: steve.id, categoryID: category.id, title: 'A <i>title</i>', message: 'Hi' },
    })
  ).json().data;
  await call(app, `/api/support/tickets/${ticket.id}/messages`, {
    body: { userID: staff.id, message: '<script>alert(1)</script>\nSecond line', isAdmin: '1' },
  });
  const reply = await smtp.waitFor((m) => /ticket/.test(m.subject));
  t.match(reply.html, 'staff answered your ticket “A &lt;i&gt;title&lt;/i&gt;”');
  t.match(reply.html, '&lt;script&gt;alert(1)&lt;/script&gt;\nSecond line</blockquote>', 'the answer escaped, its lines kept');
  t.notMatch(reply.html, '<script>');
});

t.test('a refused send is retried with growing delays and the console shows it; send again', async (t) => {
  const smtp = await new TestSmtp().start(t);
  smtp.refuse = 2;
  const app = await mailApp(t, smtp, { retryBaseMs: 200, pollMs: 50 });
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const kit = await makeProduct(app, { categoryID: ranks, name: 'Kit', price: '1.00' });
  await call(app, '/api/store/buy', { body: { userID: steve.id, products: [kit] }, as: 'json' });

  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;
  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload });

  // The first attempt was refused at once; the console shows the row waiting with its error.
  await waitUntil(async () => (await outbox(app))[0]?.lastError != null);
  const waiting = await app.inject({ url: '/console/email', headers: { cookie } });
  t.equal(waiting.statusCode, 200);
  t.match(waiting.body, /retrying at/);
  t.match(waiting.body, /Try again later/);

  const receipt = await smtp.waitFor((m) => /order/i.test(m.subject));
  t.same(receipt.to, ['steve@example.com']);
  await waitUntil(async () => (await outbox(app))[0]?.state === 'sent');
  const [row] = await outbox(app);
  t.match(row, { state: 'sent', attempts: 3, lastError: /451 Try again later/ }, 'sent at the third attempt; the last refusal is kept');
  const sent = await app.inject({ url: '/console/email', headers: { cookie } });
  t.match(sent.body, /sent \d{4}-/);

  // Send again: a new message with attempts of its own.
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(sent.body)![1]!;
  const again = await post(`/console/email/${(await outbox(app))[0]!.id}/again`, `_csrf=${csrf}`);
  t.equal(again.statusCode, 303);
  await waitUntil(() => smtp.received.length === 2);
  t.equal(smtp.received[1]!.subject, receipt.subject);
  t.equal(await rowCount(app, 'email_outbox'), 2);

  // A test message to any address.
  const test = await post('/console/email/test', `_csrf=${csrf}&to=owner%40example.org`);
  t.equal(test.statusCode, 303);
  const message = await smtp.waitFor((m) => m.to[0] === 'owner@example.org');
  t.equal(message.subject, 'Test message from Community Store');
  const bad = await post('/console/email/test', `_csrf=${csrf}&to=not-an-address`);
  t.equal(bad.statusCode, 422, 'a bad address is refused beside its field');
  t.equal(await rowCount(app, 'email_outbox'), 3, 'and queues nothing');

  // Both are in the audit log under the staff member who asked; the refused test is not.
  const [first] = await outbox(app);
  const entries = (await call(app, '/api/admin/audit?action=email.')).json();
  t.match(entries, [
    { action: 'email.test', actor: 'Alice', targetType: 'email', targetID: String(first!.id + 2), after: { to: 'owner@example.org' } },
    { action: 'email.again', actor: 'Alice', targetType: 'email', targetID: String(first!.id), after: { copy: first!.id + 1 } },
  ]);
  t.equal(entries.length, 2);
});

async function waitUntil(ok: () => boolean | Promise<boolean>, ms = 10000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('password reset: a mailed single-use link sets a new password in the storefront', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp);
  const steve = await newUser(app, 'Steve');
  await app.services.get(authRef).setPassword(steve.id, PASSWORD);
  const visitor = new Visitor(app);
  const signIn = await visitor.get('/login');
  t.match(signIn.body, /href="\/password\/forgot"/, 'the sign-in page offers the reset');

  t.equal((await visitor.post('/password/forgot', { login: '' })).statusCode, 422);
  const unknown = await visitor.post('/password/forgot', { login: 'nobody' });
  const asked = await visitor.post('/password/forgot', { login: 'STEVE@example.com' });
  t.equal(asked.statusCode, 200);
  t.equal(unknown.body.replace(/_csrf" value="[0-9a-f]+/g, ''), asked.body.replace(/_csrf" value="[0-9a-f]+/g, ''), 'an unknown account gets the same answer');
  const mail = await smtp.waitFor((m) => /Reset/.test(m.subject));
  t.same(mail.to, ['steve@example.com']);
  const path = linkIn(mail.text, '/password/reset/');
  t.equal(await rowCount(app, 'email_outbox'), 1, 'the unknown account queued nothing');
  const [stored] = await outbox(app);
  t.notMatch(stored!.params, path.split('/').pop()!, 'the token never waits in the outbox');
  const [token] = await tokens(app);
  t.not(token!.tokenHash, path.split('/').pop(), 'only its hash is stored');

  t.equal((await visitor.get(path)).statusCode, 200);
  const short = await visitor.post(path, { password: 'abc' });
  t.equal(short.statusCode, 422, 'a password too short is refused');
  t.match(short.body, /6 to 128 characters/);
  const set = await visitor.post(path, { password: 'a new password 2' });
  t.equal(set.statusCode, 303);
  t.equal(set.headers.location, '/login');
  const again = await visitor.post(path, { password: 'another one 3' });
  t.equal(again.statusCode, 400, 'the link works once');
  t.equal((await visitor.get(path)).statusCode, 400);
  t.equal((await visitor.get('/password/reset/0123')).statusCode, 400);

  const old = await call(app, '/api/auth/login', { body: { username: 'Steve', password: PASSWORD, ip: '10.1.1.1', useragent: 't' } });
  t.equal(old.statusCode, 401, 'the old password is gone');
  const fresh = await call(app, '/api/auth/login', { body: { username: 'Steve', password: 'a new password 2', ip: '10.1.1.1', useragent: 't' } });
  t.equal(fresh.statusCode, 200, fresh.body);
});

t.test('two links raced: one password wins, the other request is refused', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp);
  await newUser(app, 'Steve');
  const visitor = new Visitor(app);
  await visitor.post('/password/forgot', { login: 'Steve' });
  const path = linkIn((await smtp.waitFor(() => true)).text, '/password/reset/');
  const [a, b] = await Promise.all([visitor.post(path, { password: 'first password 1' }), visitor.post(path, { password: 'second password 2' })]);
  t.same([a.statusCode, b.statusCode].sort(), [303, 400]);
});

t.test('verification at registration: the link must be opened before the storefront signs in', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp, { requireVerification: true });
  const res = await signUp(app, 'Steve', '10.2.0.1');
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.json().data.isEmailVerificationRequired, true);
  t.equal((await read(app, '/api/users?username=Steve')).isVerified, '0');
  const mail = await smtp.waitFor((m) => /Confirm/.test(m.subject));
  t.same(mail.to, ['steve@example.org']);
  const path = linkIn(mail.text, '/verify/');

  const visitor = new Visitor(app);
  const refused = await visitor.post('/login', { username: 'Steve', password: PASSWORD });
  t.equal(refused.statusCode, 403);
  t.match(refused.body, /Confirm your email address first/);
  const resent = await visitor.post('/verify/resend', { login: 'Steve' });
  t.equal(resent.statusCode, 200);
  await smtp.waitFor(() => smtp.received.length === 2);

  const opened = await visitor.get(path);
  t.equal(opened.statusCode, 303);
  t.equal((await read(app, '/api/users?username=Steve')).isVerified, '1');
  t.equal((await visitor.get(path)).statusCode, 400, 'a link works once');
  t.equal((await visitor.post('/login', { username: 'Steve', password: PASSWORD })).statusCode, 303, 'signed in');

  // The storefront's register says to look for the mail and signs nobody in.
  const joiner = new Visitor(app);
  await joiner.get('/register');
  const registered = await joiner.post('/register', { username: 'Alex', email: 'alex@example.org', password: PASSWORD });
  t.equal(registered.statusCode, 303);
  t.equal(registered.headers.location, '/login');
  t.notOk(joiner.cookies.get('storefront_session'), 'no session before the link is opened');
  await smtp.waitFor((m) => m.to[0] === 'alex@example.org');

  // The operator's command line vouches for the address.
  const made = await app.services.get(authRef).createAccount({ username: 'Admin', password: PASSWORD, email: 'admin@example.org' });
  t.equal((await read(app, `/api/users?userID=${made.userId}`)).isVerified, '1');
});

t.test('verification at registration starts once an SMTP server is set in the console, without a restart', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await build(t, { config: { plugins: { email: { requireVerification: true }, storefront: { publicUrl: SITE } } } });
  const before = await signUp(app, 'Steve', '10.2.1.1');
  t.equal(before.json().data.isEmailVerificationRequired, false, 'no mail can carry the link yet');
  t.equal((await read(app, '/api/users?username=Steve')).isVerified, '1');

  const set = await call(app, '/api/admin/email/smtp', {
    method: 'PATCH',
    body: { host: '127.0.0.1', port: smtp.port, from: 'store@example.org' },
    as: 'json',
  });
  t.equal(set.statusCode, 200, set.body);
  const after = await signUp(app, 'Alex', '10.2.1.2');
  t.equal(after.json().data.isEmailVerificationRequired, true);
  t.equal((await read(app, '/api/users?username=Alex')).isVerified, '0');
  t.same((await smtp.waitFor((m) => /Confirm/.test(m.subject))).to, ['alex@example.org']);
});

t.test('without SMTP nothing is queued or sent, and the pages say so', async (t) => {
  const app = await build(t);
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const kit = await makeProduct(app, { categoryID: ranks, name: 'Kit', price: '1.00' });
  t.equal((await call(app, '/api/store/buy', { body: { userID: steve.id, products: [kit] }, as: 'json' })).statusCode, 200);
  const res = await signUp(app, 'Alex', '10.3.0.1');
  t.equal(res.json().data.isEmailVerificationRequired, false);
  t.equal(await rowCount(app, 'email_outbox'), 0);
  const visitor = new Visitor(app);
  t.notMatch((await visitor.get('/login')).body, /password\/forgot/);
  t.equal((await visitor.get('/password/forgot')).statusCode, 404);
});

t.test('the API: a reset and a verification by token for other front ends; bad input changes nothing', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp, { requireVerification: true });
  await signUp(app, 'Steve', '10.4.0.1');
  const verifyToken = linkIn((await smtp.waitFor((m) => /Confirm/.test(m.subject))).text, '/verify/')
    .split('/')
    .pop()!;

  const asked = await call(app, '/api/email/password-reset', { body: { login: 'steve', lang: 'de' }, as: 'json' });
  t.strictSame(asked.json(), { status: true });
  const mail = await smtp.waitFor((m) => /Passwort/.test(m.subject));
  t.equal(mail.subject, 'Setze dein Passwort für Community Store zurück', 'in the language asked for');
  t.match(mail.text, /Hallo Steve,/);
  const resetToken = linkIn(mail.text, '/password/reset/').split('/').pop()!;
  const unknown = await call(app, '/api/email/password-reset', { body: { login: 'nobody' }, as: 'json' });
  t.strictSame(unknown.json(), { status: true }, 'an unknown account: the same answer');

  const before = await tokens(app);
  for (const [url, body, status, error] of [
    ['/api/email/password-reset', {}, 400, 'VALIDATION_ERROR'],
    ['/api/email/password-reset', { login: 'steve', lang: 'fr' }, 400, 'VALIDATION_ERROR'],
    ['/api/email/password-reset/confirm', { token: resetToken }, 400, 'VALIDATION_ERROR'],
    ['/api/email/password-reset/confirm', { token: resetToken, password: 'abc' }, 400, 'INVALID_PASSWORD'],
    ['/api/email/password-reset/confirm', { token: verifyToken, password: 'a good password' }, 400, 'EMAIL_TOKEN_INVALID'],
    ['/api/email/password-reset/confirm', { token: 'zz', password: 'a good password' }, 400, 'EMAIL_TOKEN_INVALID'],
    ['/api/email/verify', { token: resetToken }, 400, 'EMAIL_TOKEN_INVALID'],
    ['/api/email/verify', { token: '' }, 400, 'VALIDATION_ERROR'],
  ] as const) {
    const res = await call(app, url, { body, as: 'json' });
    t.equal(res.statusCode, status, `${url} ${JSON.stringify(body)}`);
    t.equal(res.json().error, error);
  }
  t.same(await tokens(app), before, 'the refusals used no token');

  const confirm = (password: string) => call(app, '/api/email/password-reset/confirm', { body: { token: resetToken, password }, as: 'json' });
  t.strictSame((await confirm('a good password')).json(), { status: true });
  t.equal((await confirm('another password')).json().error, 'EMAIL_TOKEN_INVALID', 'once');
  t.strictSame((await call(app, '/api/email/verify', { body: { token: verifyToken }, as: 'json' })).json(), { status: true });
  t.equal((await read(app, '/api/users?username=Steve')).isVerified, '1');
  const login = await call(app, '/api/auth/login', { body: { username: 'Steve', password: 'a good password', ip: '10.4.0.1', useragent: 't' } });
  t.equal(login.statusCode, 200);
});

t.test('the API without SMTP: asking for a link is refused as a feature that is off', async (t) => {
  const app = await build(t, { features: ['users', 'auth', 'email'] });
  const res = await call(app, '/api/email/password-reset', { body: { login: 'steve' }, as: 'json' });
  t.equal(res.statusCode, 404);
  t.match(res.json(), { error: 'NOT_FOUND', message: /SMTP is not set up/ });
  t.equal(await rowCount(app, 'email_outbox'), 0);
});

t.test('expired links are refused by the API and the storefront and change nothing', async (t) => {
  const smtp = await new TestSmtp().start(t);
  const app = await mailApp(t, smtp, { requireVerification: true });
  await signUp(app, 'Steve', '10.5.0.1');
  const verifyPath = linkIn((await smtp.waitFor((m) => /Confirm/.test(m.subject))).text, '/verify/');
  await call(app, '/api/email/password-reset', { body: { login: 'Steve' }, as: 'json' });
  const resetPath = linkIn((await smtp.waitFor((m) => /Reset/.test(m.subject))).text, '/password/reset/');
  // Both links past their end, as time would leave them, without waiting for it.
  await app.db.run(sql`update ${EmailToken} set ${EmailToken.c.expiresAt} = '2000-01-01 00:00:00'`);
  const before = await tokens(app);

  const token = (path: string) => path.split('/').pop()!;
  const reset = await call(app, '/api/email/password-reset/confirm', { body: { token: token(resetPath), password: 'a good password' }, as: 'json' });
  t.equal(reset.statusCode, 400);
  t.equal(reset.json().error, 'EMAIL_TOKEN_INVALID');
  const verify = await call(app, '/api/email/verify', { body: { token: token(verifyPath) }, as: 'json' });
  t.equal(verify.statusCode, 400);
  t.equal(verify.json().error, 'EMAIL_TOKEN_INVALID');

  const visitor = new Visitor(app);
  for (const page of [await visitor.get(resetPath), await visitor.post(resetPath, { password: 'a good password' })]) {
    t.equal(page.statusCode, 400);
    t.match(page.body, /used already or expired/);
  }
  const opened = await visitor.get(verifyPath);
  t.equal(opened.statusCode, 400);
  t.match(opened.body, /used already or expired/);

  t.same(await tokens(app), before, 'no token was used');
  t.equal((await read(app, '/api/users?username=Steve')).isVerified, '0');
  const login = await call(app, '/api/auth/login', { body: { username: 'Steve', password: PASSWORD, ip: '10.5.0.1', useragent: 't' } });
  t.equal(login.statusCode, 200, 'the password is the old one');
});

/** Two instances on one database, mailing links to an account twice an hour at most, and `perIp` times to a client. */
async function twoLimited(t: Test, perIp: number) {
  const smtp = await new TestSmtp().start(t);
  const url = await sharedDatabaseUrl(t);
  const limits = { rateLimit: { perAddress: { max: 2, windowSeconds: 3600 }, perIp: { max: perIp, windowSeconds: 3600 } } };
  return { smtp, one: await mailApp(t, smtp, limits, {}, url), two: await mailApp(t, smtp, limits, {}, url) };
}

/** The API's ask for a mailed link (`password-reset`, `verify/resend`) from the client at `ip`. */
const ask = (app: FastifyInstance, route: string, login: string, ip: string) =>
  call(app, `/api/email/${route}`, { body: { login }, as: 'json', remoteAddress: ip });

t.test("the API's mailed links are limited per account and per client, counted across instances", async (t) => {
  const { smtp, one, two } = await twoLimited(t, 3);
  await newUser(one, 'Steve');

  t.equal((await ask(one, 'password-reset', 'Steve', '10.6.0.1')).statusCode, 200);
  t.equal((await ask(two, 'password-reset', 'steve', '10.6.0.2')).statusCode, 200, 'the other instance counts the same account');
  await waitUntil(() => smtp.received.length === 2);
  for (const [app, route] of [
    [one, 'password-reset'],
    [two, 'verify/resend'],
  ] as const) {
    const refused = await ask(app, route, 'STEVE', '10.6.0.3');
    t.equal(refused.statusCode, 429, route);
    t.equal(refused.json().error, 'RATE_LIMITED');
    t.ok(Number(refused.headers['retry-after']) > 3500, 'with the time left of the window');
  }
  t.equal(await rowCount(one, 'email_outbox'), 2, 'a refused request queues nothing');
  t.equal((await ask(two, 'password-reset', 'Alex', '10.6.0.3')).statusCode, 200, 'another account is not held back');

  // One client asking for many accounts: the fourth from it is refused, on either instance.
  t.equal((await ask(one, 'password-reset', 'Bob', '10.6.0.9')).statusCode, 200);
  t.equal((await ask(two, 'verify/resend', 'Carol', '10.6.0.9')).statusCode, 200);
  t.equal((await ask(one, 'password-reset', 'Dave', '10.6.0.9')).statusCode, 200);
  t.equal((await ask(two, 'password-reset', 'Erin', '10.6.0.9')).json().error, 'RATE_LIMITED');
  t.equal((await ask(one, 'password-reset', 'Erin', '10.6.0.10')).statusCode, 200, 'another client is not held back');
  t.equal(await rowCount(one, 'email_outbox'), 2);
});

t.test("the storefront's mail forms count against the account's limit the API counts, on every instance", async (t) => {
  const { smtp, one, two } = await twoLimited(t, 20);
  await newUser(one, 'Steve');
  await newUser(one, 'Alex');
  const shop = new Visitor(one);
  await shop.get('/password/forgot');

  t.equal((await shop.post('/password/forgot', { login: 'Steve' })).statusCode, 200);
  t.equal((await ask(two, 'password-reset', ' steve', '10.8.0.2')).statusCode, 200, 'the API on the other instance counts the same account');
  await waitUntil(() => smtp.received.length === 2);

  for (const path of ['/password/forgot', '/verify/resend']) {
    const refused = await shop.post(path, { login: 'STEVE ' });
    t.equal(refused.statusCode, 429, path);
    t.match(refused.body, /Too many attempts; try again in 60 min\./, "with the time left of the account's window");
  }
  t.equal((await ask(two, 'password-reset', 'Steve', '10.8.0.3')).json().error, 'RATE_LIMITED', 'and the API refuses it too');
  t.equal(await rowCount(one, 'email_outbox'), 2, 'a refused request queues nothing');

  t.equal((await shop.post('/password/forgot', { login: 'Alex' })).statusCode, 200, 'the same visitor may still ask for another account');
  await waitUntil(() => smtp.received.length === 3);
  t.same(smtp.received[2]!.to, ['alex@example.com']);
});

t.test("an owner's template folder replaces the mails it has a file for", async (t) => {
  const smtp = await new TestSmtp().start(t);
  const themeDir = join(scratchDir(t), 'mails');
  mkdirSync(themeDir);
  writeFileSync(join(themeDir, 'reset-password.eta'), 'Hi <%= it.name %>, the crew of <%= it.site %> sends your link:\n<%= it.link %>\n');
  writeFileSync(join(themeDir, 'verify-email.html.eta'), '<p>Welcome, <%= it.name %>: <a href="<%= it.link %>">confirm</a></p>');
  const app = await mailApp(t, smtp, { themeDir, requireVerification: true });
  await signUp(app, 'Steve', '10.7.0.1');
  const verify = await smtp.waitFor((m) => /Confirm/.test(m.subject));
  t.match(verify.text, /Hello Steve,/, 'a mail the folder has no file for keeps the shipped template');
  await call(app, '/api/email/password-reset', { body: { login: 'Steve' }, as: 'json' });
  const reset = await smtp.waitFor((m) => /Reset/.test(m.subject));
  t.match(reset.text, /^Hi Steve, the crew of Community Store sends your link:\n/);
  linkIn(reset.text, '/password/reset/');
  t.equal(reset.html, undefined, 'a mail whose text the owner wrote, without an HTML file of theirs, goes as their text alone');
  t.match(verify.html, /Welcome, Steve: <a href="[^"]+\/verify\/[0-9a-f]+">confirm<\/a>/, "an owner's HTML file replaces the shipped one");
  t.match(verify.html, '<h1 style="margin:0 0 16px;font-size:20px">Community Store</h1>', 'inside the shipped frame');
  await t.rejects(
    build(t, { config: { plugins: { email: smtp.config({ themeDir: join(themeDir, 'missing') }) } } }),
    /plugins.email.themeDir: there is no folder/,
  );
});
