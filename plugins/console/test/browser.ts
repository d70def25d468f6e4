/** The console's browser-test helpers: sign-in and notices; the browser, the server, roles and sign-in without a browser come from test/browser.ts. */
import type { Page } from 'playwright-core';
import { PASSWORD } from '../../../test/browser.ts';

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
