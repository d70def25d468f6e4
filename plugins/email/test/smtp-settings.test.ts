/**
 * The SMTP server set in the console (issue 49): its password sealed at rest and never shown back
 * whole, a test sent at once to the signed-in staff member through a real SMTP server that asks
 * for sign-in, used without a restart on every instance, every change audited without the
 * password, and the configuration file and environment winning where they are set.
 */
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { grant, register, role, signInByForm } from '../../../test/browser.ts';
import { makeCategory, makeProduct, newUser } from '../../../test/fixtures.ts';
import { build, call, sharedDatabaseUrl } from '../../../test/helper.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { CoreSetting } from '../../../core/settings.ts';

const PASSWORD = 'mail-password-x9Qa';
const LOGIN = { user: 'mailer', pass: PASSWORD };

/** Alice, an admin with an address, signed in to the console: a form poster and the page reader. */
async function staff(app: FastifyInstance) {
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).split(';')[0]!;
  const page = async () => {
    const res = await app.inject({ url: '/console/email', headers: { cookie } });
    return { body: res.body, csrf: /name="_csrf" value="([0-9a-f]+)"/.exec(res.body)![1]! };
  };
  const post = async (url: string, fields: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: (await page()).csrf, ...fields }).toString(),
    });
  return { page, post };
}

/** Everything an answer or the audit log could show the password in. */
const leaks = (text: string) => text.includes(PASSWORD) || text.includes(PASSWORD.slice(0, 12));

async function waitUntil(ok: () => boolean | Promise<boolean>, ms = 15000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('an owner sets SMTP in the console: sealed, never shown back, tested, used at once, audited', async (t) => {
  const smtp = await new TestSmtp({ login: LOGIN }).start(t);
  const app = await build(t);
  const alice = await staff(app);
  const answers: string[] = [];

  const off = await alice.page();
  answers.push(off.body);
  t.match(off.body, /Email is off/);
  t.match(off.body, /id="email-smtp"/, 'the form to set the server is on the page');

  const saved = await alice.post('/console/email/smtp', {
    host: '127.0.0.1',
    port: String(smtp.port),
    user: 'mailer',
    password: PASSWORD,
    from: 'Store <store@example.org>',
  });
  t.equal(saved.statusCode, 303, saved.body);

  const view = await call(app, '/api/admin/email/smtp');
  answers.push(view.body);
  t.match(view.json().data, {
    host: '127.0.0.1',
    port: smtp.port,
    user: 'mailer',
    from: 'Store <store@example.org>',
    passwordSet: true,
    passwordEnding: 'x9Qa',
    sources: { host: 'console', password: 'console' },
  });
  const [row] = await CoreSetting.select(app.db, undefined).then((rows) => rows.filter((r) => r.key === 'email:smtp'));
  t.ok(row, 'kept beside the site settings');
  t.notOk(leaks(row!.value), 'the stored password is sealed');
  t.match(JSON.parse(row!.value).password, /^v1:/);

  const on = await alice.page();
  answers.push(on.body);
  t.match(on.body, /set \(ends in x9Qa\)/);

  // The test goes at once to Alice's own address, signed in with the stored password.
  const tested = await alice.post('/console/email/smtp/test', {});
  t.equal(tested.statusCode, 303, tested.body);
  const message = await smtp.waitFor((m) => m.to[0] === 'alice@example.org');
  t.match(message.subject, /^Test message/);
  t.same(smtp.logins, ['mailer']);

  // Used without a restart: a purchase's receipt goes through it.
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  const kit = await makeProduct(app, { categoryID: await makeCategory(app, { name: 'Kits', slug: 'kits' }), name: 'Kit', price: '1.00' });
  t.equal((await call(app, '/api/store/buy', { body: { userID: steve.id, products: [kit] }, as: 'json' })).statusCode, 200);
  await smtp.waitFor((m) => m.to[0] === 'steve@example.com');

  // An empty password keeps the stored one.
  const sender = await alice.post('/console/email/smtp', {
    host: '127.0.0.1',
    port: String(smtp.port),
    user: 'mailer',
    password: '',
    from: 'Shop <shop@example.org>',
  });
  t.equal(sender.statusCode, 303, sender.body);
  const viaApi = await call(app, '/api/admin/email/smtp/test', { body: { to: 'owner@example.org' } });
  t.equal(viaApi.statusCode, 200, viaApi.body);
  t.equal((await smtp.waitFor((m) => m.to[0] === 'owner@example.org')).from, 'shop@example.org');
  t.same(smtp.logins, ['mailer', 'mailer', 'mailer'], 'still signed in with the kept password');

  // Bad input is refused beside its field and changes nothing.
  for (const [body, field] of [
    [{ port: 0 }, 'port'],
    [{ from: '' }, 'from'],
    [{ host: 'x'.repeat(300) }, 'host'],
    [{ secure: 'maybe' }, 'secure'],
    [{ password: 'x'.repeat(600) }, 'password'],
  ] as const) {
    const refused = await call(app, '/api/admin/email/smtp', { method: 'PATCH', body });
    answers.push(refused.body);
    t.equal(refused.statusCode, 400, JSON.stringify(body));
    t.match(refused.json(), { status: false, error: 'VALIDATION_ERROR', message: new RegExp(field) });
  }
  const wrongPort = await alice.post('/console/email/smtp', { host: '127.0.0.1', port: '70000', from: 'a@example.org' });
  t.equal(wrongPort.statusCode, 422);
  t.match((await call(app, '/api/admin/email/smtp')).json().data, { from: 'Shop <shop@example.org>', port: smtp.port });

  // A server that refuses the sign-in: the test says so, as a 502 in the API and beside the form in the console.
  const changed = await call(app, '/api/admin/email/smtp', { method: 'PATCH', body: { password: 'another-wrong-one' } });
  answers.push(changed.body);
  t.equal(changed.statusCode, 200);
  t.equal(changed.json().data.passwordEnding, '-one');
  const failed = await call(app, '/api/admin/email/smtp/test', { body: { to: 'owner@example.org' } });
  t.equal(failed.statusCode, 502);
  t.equal(failed.json().error, 'SMTP_ERROR');
  const failedForm = await alice.post('/console/email/smtp/test', {});
  t.equal(failedForm.statusCode, 422);
  t.match(failedForm.body, /did not take the message/);

  const audit = await call(app, '/api/admin/audit?action=email.smtp.update');
  answers.push(audit.body);
  const entries = audit.json() as { action: string; actor: string; after: Record<string, unknown> }[];
  t.equal(entries.length, 3, 'every change, and only changes, is audited');
  t.match(entries.at(-1), { action: 'email.smtp.update', actor: 'Alice', after: { host: '127.0.0.1', user: 'mailer', password: 'changed' } });
  t.notOk(answers.some(leaks), 'no answer and no audit entry holds the password');
});

t.test('the configuration file and the environment win, and the console shows those fields read-only', async (t) => {
  const smtp = await new TestSmtp({ login: LOGIN }).start(t);
  const app = await build(t, {
    config: { plugins: { email: { smtp: { ...(smtp.config().smtp as object), user: 'mailer' } } } },
    env: { SMTP_PASSWORD: PASSWORD },
  });
  const alice = await staff(app);
  const view = (await call(app, '/api/admin/email/smtp')).json().data;
  t.match(view, { host: '127.0.0.1', passwordEnding: 'x9Qa', sources: { host: 'config', from: 'config', password: 'environment' } });
  for (const body of [{ host: 'smtp.example.org' }, { password: 'mine-instead-1234' }]) {
    const refused = await call(app, '/api/admin/email/smtp', { method: 'PATCH', body });
    t.equal(refused.statusCode, 400);
    t.match(refused.json().message, /configuration file|environment variable SMTP_PASSWORD/);
  }
  const page = await alice.page();
  t.match(page.body, /127\.0\.0\.1:\d+ \(configuration file\)/);
  t.match(page.body, /environment variable SMTP_PASSWORD/);
  t.notMatch(page.body, /id="email-smtp"/, 'no field left to change');
  t.equal((await alice.post('/console/email/smtp/test', {})).statusCode, 303);
  await smtp.waitFor((m) => m.to[0] === 'alice@example.org');
});

t.test('two instances on one database: a change made on one is used by the other', async (t: Test) => {
  const smtp = await new TestSmtp({ login: LOGIN }).start(t);
  const url = await sharedDatabaseUrl(t);
  const one = await build(t, { databaseUrl: url });
  const two = await build(t, { databaseUrl: url });
  const set = await call(one, '/api/admin/email/smtp', {
    method: 'PATCH',
    body: { host: '127.0.0.1', port: smtp.port, user: 'mailer', password: PASSWORD, from: 'Store <store@example.org>' },
  });
  t.equal(set.statusCode, 200, set.body);
  await waitUntil(async () => (await call(two, '/api/admin/email/smtp')).json().data.host === '127.0.0.1');
  const sent = await call(two, '/api/admin/email/smtp/test', { body: { to: 'two@example.org' } });
  t.equal(sent.statusCode, 200, sent.body);
  await smtp.waitFor((m) => m.to[0] === 'two@example.org');
  t.same(smtp.logins, ['mailer'], 'the other instance opened the sealed password');
});
