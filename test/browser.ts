/**
 * End-to-end tests of the server's pages (the console, the storefront) drive Debian's `chromium`
 * through playwright-core against a server listening on 127.0.0.1 and a free port. Without the
 * browser they skip, saying why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import tap from 'tap';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { rootDir } from '../core/config.ts';
import type { Clock } from '../core/clock.ts';
import { build, call, type TestLike } from './helper.ts';

export const CHROMIUM = '/usr/bin/chromium';
/**
 * TEST_BROWSER=0 turns the browser tests off for a run: CI's second pass, on MariaDB, sets it, since
 * what the pages do in the database is tested through HTTP on both databases.
 */
const browserOff = process.env.TEST_BROWSER === '0';
export const hasChromium = !browserOff && existsSync(CHROMIUM);
export const skipReason = browserOff
  ? 'TEST_BROWSER=0: the browser tests are off for this run'
  : `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium) to run the browser tests`;

export const PASSWORD = 'correct horse 1';

/** The app on a fresh database, listening on 127.0.0.1 and a free port; closed when the test ends. */
export async function serve(
  t: TestLike,
  config: unknown = {},
  env: Record<string, string> = {},
  clock?: Clock,
): Promise<{ app: FastifyInstance; base: string }> {
  const app = await build(t, { config, env, clock });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

/**
 * Waits for the page's notice to say `text` (the page before may still show an older one). When it
 * never comes, the error says what the page showed instead: its address, notices and form errors.
 */
export async function notice(page: Page, text: RegExp): Promise<string> {
  const status = page.getByRole('status').filter({ hasText: text });
  try {
    await status.waitFor();
  } catch (err) {
    const shown = await page
      .locator('[role=status], [role=alert], .error')
      .allTextContents()
      .catch(() => []);
    throw new Error(`no notice ${text} at ${page.url()}; the page shows: ${JSON.stringify(shown)}`, { cause: err });
  }
  return (await status.textContent()) ?? '';
}

let launched: Promise<Browser> | undefined;

/**
 * One Chromium per test process, closed when the file's tests end: a launch costs more than a
 * fresh context, and each test still gets a context of its own (cookies, storage and cache apart).
 */
function sharedBrowser(): Promise<Browser> {
  launched ??= chromium
    .launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    .then((browser) => {
      tap.teardown(() => browser.close());
      return browser;
    });
  return launched;
}

/** A browser context of its own (nothing shared between tests), closed when the test ends. */
export async function browse(t: TestLike, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await (await sharedBrowser()).newContext({ viewport: { width: 1280, height: 860 }, ...options });
  t.teardown(() => context.close());
  // A bound, not a wait: a passing test never reaches it. Two suites side by side on two cores took a console
  // page past 20 s once; tap's own timeout (180 s a file) still ends a test that hangs.
  context.setDefaultTimeout(90_000);
  return context;
}

let registered = 0;

/** Registers a player through the API (each from an ip of its own: the register limit counts per ip); returns their id. */
export async function register(app: FastifyInstance, username: string, email = `${username.toLowerCase()}@example.org`): Promise<number> {
  registered++;
  const ip = `10.0.${(registered >> 8) & 255}.${registered & 255}`;
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
    method: 'POST',
    url: '/console/login',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: csrf, username, password: PASSWORD }).toString(),
  });
}

/**
 * The README's screenshots, written when SCREENSHOTS is set (`SCREENSHOTS=1 npm test`): an
 * ordinary test run leaves the checkout as it found it.
 */
/** Signs in to the staff console in the browser, as staff of any feature's console pages do. */
export async function consoleSignIn(page: Page, base: string, username: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/console/login`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!process.env.SCREENSHOTS) return;
  const dir = join(rootDir, 'docs/screenshots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The page's serious and critical accessibility violations found by axe-core (its source
 * evaluated in the page through the browser's protocol, which the page's CSP does not govern).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const result = await (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.targets.slice(0, 3).join(', ')}`);
}
