/**
 * A forgotten password in Chromium: ask for the link on the storefront, open the HTML mail the SMTP
 * server received and follow its button, choose a new password and sign in with it; axe-core on
 * each page and on the mail.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { authRef } from '../../auth/contract.ts';
import { axeViolations, browse, hasChromium, PASSWORD, skipReason } from '../../../test/browser.ts';
import { newUser } from '../../../test/fixtures.ts';
import { build } from '../../../test/helper.ts';
import { TestSmtp } from '../../../test/smtp.ts';

const skip = hasChromium ? false : skipReason;

/** A port free now: the links in mails need the storefront's address before the server listens. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
  });
}

async function accessible(t: Test, page: Page, what: string): Promise<void> {
  t.same(await axeViolations(page), [], `${what}: no serious or critical axe-core violation`);
}

t.test('forgotten password: request, mail, link, new password, signed in', { skip }, async (t) => {
  const smtp = await new TestSmtp().start(t);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await build(t, { config: { plugins: { email: smtp.config(), storefront: { publicUrl: base } } } });
  await app.listen({ host: '127.0.0.1', port });
  const steve = await newUser(app, 'Steve');
  await app.services.get(authRef).setPassword(steve.id, PASSWORD);
  const page = await (await browse(t)).newPage();

  await page.goto(`${base}/login`);
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByRole('heading', { name: 'Forgot your password', level: 1 }).waitFor();
  await accessible(t, page, 'forgotten password');
  await page.getByLabel('Username or email').fill('steve@example.com');
  await page.getByRole('button', { name: 'Mail me a reset link' }).click();
  await page.getByRole('heading', { name: 'Check your inbox', level: 1 }).waitFor();
  await accessible(t, page, 'link mailed');

  const mail = await smtp.waitFor((m) => /Reset/.test(m.subject));
  t.same(mail.to, ['steve@example.com']);
  const link = new RegExp(`${base}/password/reset/[0-9a-f]{64}`).exec(mail.text)?.[0];
  t.ok(link, 'the mail carries the link');
  // The HTML part, as a mail program shows it: accessible, and its button opens the same link.
  await page.setContent(mail.html!);
  await accessible(t, page, 'the mail');
  await page.getByRole('link', { name: 'Choose a new password' }).click();
  await page.getByRole('heading', { name: 'Choose a new password', level: 1 }).waitFor();
  t.equal(page.url(), link, "the HTML mail's button opens the text's link");
  await accessible(t, page, 'new password');
  await page.getByLabel('New password').fill('abc');
  await page.getByRole('button', { name: 'Save password' }).click();
  await page.getByText('The password must be 6 to 128 characters long.').waitFor();
  await accessible(t, page, 'new password refused');
  await page.getByLabel('New password').fill('a brand new password');
  await page.getByRole('button', { name: 'Save password' }).click();
  await page.getByText('Your password is changed: sign in with it.').waitFor();

  await page.getByLabel('Username').fill('Steve');
  await page.getByLabel('Password').fill('a brand new password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'My account', level: 1 }).waitFor();
  t.pass('signed in with the new password');

  await page.goto(link!);
  await page.getByText('This link is unknown, used already or expired. Ask for a new one.').waitFor();
  t.pass('the link works once');
});
