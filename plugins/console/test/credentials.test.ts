/**
 * The console pages that set the mail server and the gateways' credentials (issue 49), in
 * Chromium: an owner sets SMTP and sends a test to their own address through a real SMTP server,
 * sets Stripe's keys, and both pages pass axe-core on a desktop and on a phone.
 */
import t from 'tap';
import { axeViolations } from '../../../test/browser.ts';
import { TestSmtp } from '../../../test/smtp.ts';
import { browse, hasChromium, notice, signIn, skipReason, staffBrowser } from './browser.ts';

const LOGIN = { user: 'mailer', pass: 'mail-password-x9Qa' };

t.test('an owner sets SMTP and Stripe in the console; the pages pass axe on a desktop and a phone', { skip: hasChromium ? false : skipReason }, async (t) => {
  const smtp = await new TestSmtp({ login: LOGIN }).start(t);
  const { base, page, menu } = await staffBrowser(t);
  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await menu.getByRole('link', { name: 'Email' }).click();
  await page.getByRole('heading', { name: 'Email', level: 1 }).waitFor();
  t.same(await axeViolations(page), [], 'the Email page with mail off passes axe');
  await page.getByLabel('SMTP server', { exact: true }).fill('127.0.0.1');
  await page.getByLabel('Port', { exact: true }).fill(String(smtp.port));
  await page.getByLabel('Sign-in user', { exact: true }).fill(LOGIN.user);
  await page.getByLabel('Password', { exact: true }).fill(LOGIN.pass);
  await page.getByLabel('Sender', { exact: true }).fill('Store <store@example.org>');
  await page.getByRole('button', { name: 'Save SMTP settings' }).click();
  await notice(page, /SMTP settings saved/);
  t.match(await page.textContent('main'), /set \(ends in x9Qa\)/);
  t.notMatch(await page.content(), LOGIN.pass, 'the password is not on the page');
  t.same(await axeViolations(page), [], 'the Email page with mail on passes axe');

  await page.getByRole('button', { name: 'Send a test message to my address' }).click();
  await notice(page, /went to alice@example\.org/);
  await smtp.waitFor((m) => m.to[0] === 'alice@example.org');
  t.same(smtp.logins, [LOGIN.user]);

  await menu.getByRole('link', { name: 'Gateways' }).click();
  await page.getByRole('heading', { name: 'Payment gateways', level: 1 }).waitFor();
  await page.getByLabel('Stripe secret key', { exact: true }).fill('sk_test_console_key_4f2a');
  await page.getByLabel('Stripe webhook signing secret', { exact: true }).fill('whsec_console_secret_9z9z');
  await page.getByRole('button', { name: 'Save Stripe credentials' }).click();
  await notice(page, /Stripe credentials saved/);
  t.match(await page.textContent('main'), /set \(ends in 4f2a\)/);
  t.same(await axeViolations(page), [], 'the Gateways page passes axe');

  const phone = await (await browse(t, { viewport: { width: 375, height: 740 } })).newPage();
  await signIn(phone, base, 'Alice');
  await phone.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  for (const [path, heading] of [
    ['/console/email', 'Email'],
    ['/console/gateways', 'Payment gateways'],
  ]) {
    await phone.goto(`${base}${path}`);
    await phone.getByRole('heading', { name: heading, level: 1 }).waitFor();
    t.same(await axeViolations(phone), [], `${path} passes axe on a phone`);
  }
});
