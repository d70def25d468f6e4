/**
 * The console's end-to-end tests drive Debian's `chromium` through playwright-core against a
 * server listening on 127.0.0.1 and a free port. Without the browser they skip, saying why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { rootDir } from '../../../core/config.ts';
import { build, call, scratchDir, type TestLike } from '../../../test/helper.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const skipReason = `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium) to run the console's browser tests`;

export const PASSWORD = 'correct horse 1';

/** The app on a fresh database, listening on 127.0.0.1 and a free port; closed when the test ends. */
export async function serve(t: TestLike, config: unknown = {}): Promise<{ app: FastifyInstance; base: string }> {
  const app = await build(t, { config });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

/** A browser with a profile of its own (nothing shared between tests), closed when the test ends. */
export async function browse(t: TestLike): Promise<BrowserContext> {
  const context = await chromium.launchPersistentContext(scratchDir(t), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
  });
  t.teardown(() => context.close());
  context.setDefaultTimeout(10_000);
  return context;
}

let registered = 0;

/** Registers a player through the API (each from an ip of its own: the register limit counts per ip); returns their id. */
export async function register(app: FastifyInstance, username: string, email = `${username.toLowerCase()}@example.org`): Promise<number> {
  registered++;
  const ip = `10.0.${registered >> 8 & 255}.${registered & 255}`;
  const res = await call(app, '/api/auth/register', { body: { username, password: PASSWORD, email, ip, useragent: 'test' } });
  if (res.statusCode !== 200) throw new Error(`register ${username}: ${res.body}`);
  const profile = await call(app, `/api/users?username=${username}`);
  return Number(profile.json().id);
}

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

/**
 * The README's screenshots, written when SCREENSHOTS is set (`SCREENSHOTS=1 npm test`): an
 * ordinary test run leaves the checkout as it found it.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!process.env.SCREENSHOTS) return;
  const dir = join(rootDir, 'docs/screenshots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

/** Waits for the page's notice to say `text` (the page before may still show an older one). */
export async function notice(page: Page, text: RegExp): Promise<string> {
  const status = page.getByRole('status').filter({ hasText: text });
  await status.waitFor();
  return (await status.textContent()) ?? '';
}
