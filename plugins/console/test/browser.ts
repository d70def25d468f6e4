/** The console's browser-test helpers: sign-in and notices; the browser, the server, roles and sign-in without a browser come from test/browser.ts. */
import type { Page } from 'playwright-core';
import type { TestLike } from '../../../test/helper.ts';
import { browse, grant, PASSWORD, register, role, serve } from '../../../test/browser.ts';

export { browse, grant, hasChromium, PASSWORD, register, role, screenshot, serve, signInByForm, skipReason } from '../../../test/browser.ts';

export async function signIn(page: Page, base: string, username: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/console/login`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Waits for the page's notice to say `text` (the page before may still show an older one). */
export async function notice(page: Page, text: RegExp): Promise<string> {
  const status = page.getByRole('status').filter({ hasText: text });
  await status.waitFor();
  return (await status.textContent()) ?? '';
}

/**
 * A server with an admin (Alice) and a support helper (Bob), and a browser page that accepts
 * every confirmation; nobody signed in yet.
 */
export async function staffBrowser(t: TestLike, env: Record<string, string> = {}) {
  const { app, base } = await serve(t, {}, env);
  const adminId = await register(app, 'Alice');
  const helperId = await register(app, 'Bob');
  await grant(app, adminId, await role(app, 'Admin'));
  await grant(app, helperId, await role(app, 'Support'));
  const page = await (await browse(t)).newPage();
  page.on('dialog', (dialog) => { void dialog.accept(); });
  return { app, base, page, adminId, helperId, menu: page.getByRole('navigation', { name: 'Sections' }) };
}
