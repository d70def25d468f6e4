/** The console's browser-test helpers: roles, sign-in, notices; the browser and server come from test/browser.ts. */
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { call, type TestLike } from '../../../test/helper.ts';
import { browse, PASSWORD, register, serve } from '../../../test/browser.ts';

export { browse, hasChromium, PASSWORD, register, screenshot, serve, skipReason } from '../../../test/browser.ts';

/** A role made through the API (its slug is the name in lower case); returns its id. */
export async function role(app: FastifyInstance, name: string): Promise<number> {
  const res = await call(app, '/api/admin/roles', { body: { name, slug: name.toLowerCase() } });
  if (res.statusCode !== 201) throw new Error(`role ${name}: ${res.body}`);
  return Number(res.json().id);
}

export async function grant(app: FastifyInstance, userId: number, roleId: number): Promise<void> {
  const res = await call(app, `/api/users/${userId}/roles`, { body: { roleID: String(roleId) } });
  if (res.statusCode !== 200) throw new Error(`grant: ${res.body}`);
}

/** Signs in through the form as a browser would (the form's token and its cookie), without a browser; returns the answer. */
export async function signInByForm(app: FastifyInstance, username: string) {
  const form = await app.inject('/console/login');
  const cookie = String(form.headers['set-cookie']).split(';')[0]!;
  const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(form.body)![1]!;
  return app.inject({
    method: 'POST', url: '/console/login', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, username, password: PASSWORD }).toString(),
  });
}

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
export async function staffBrowser(t: TestLike) {
  const { app, base } = await serve(t);
  const adminId = await register(app, 'Alice');
  const helperId = await register(app, 'Bob');
  await grant(app, adminId, await role(app, 'Admin'));
  await grant(app, helperId, await role(app, 'Support'));
  const page = await (await browse(t)).newPage();
  page.on('dialog', (dialog) => { void dialog.accept(); });
  return { app, base, page, adminId, helperId, menu: page.getByRole('navigation', { name: 'Sections' }) };
}
