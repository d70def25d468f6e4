/** A console session across two instances on one database, as a load balancer would spread a browser's requests. */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { build, QUIET_ROUNDS, sharedDatabaseUrl, type TestLike } from '../../../test/helper.ts';
import { browse, grant, hasChromium, register, role, signIn, skipReason } from './browser.ts';

/** An instance on `databaseUrl`, listening on 127.0.0.1 and a port of its own; its address. */
async function instance(t: TestLike, databaseUrl: string) {
  const app = await build(t, { databaseUrl, config: databaseUrl.startsWith('sqlite:') ? { plugins: QUIET_ROUNDS } : {} });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

t.test(
  'signed in on one instance, the console works on the other, and signing out there ends it on both',
  { skip: hasChromium ? false : skipReason },
  async (t) => {
    const url = await sharedDatabaseUrl(t);
    const a = await instance(t, url);
    const b = await instance(t, url);
    await grant(a.app, await register(a.app, 'Alice'), await role(a.app, 'Admin'));
    // Cookies are kept per host, not per port: the browser sends A's session cookie to B, as to one site behind a balancer.
    const page = await (await browse(t)).newPage();
    await signIn(page, a.base, 'Alice');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

    await page.goto(`${b.base}/console`);
    t.equal(new URL(page.url()).pathname, '/console', 'B knows the session A made');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    // Signing out is a form sent with the page's CSRF token: B's page, B's check.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    t.match(await page.getByRole('status').textContent(), /signed out/, "B accepts the session's form");

    await page.goto(`${a.base}/console`);
    t.equal(new URL(page.url()).pathname, '/console/login', 'and A no longer knows the session');
  },
);
