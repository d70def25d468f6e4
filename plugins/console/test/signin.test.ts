/** Staff sign-in in a real browser: wrong password, a support role's limits, CSRF, sign-out, idle sessions. */
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { browse, grant, hasChromium, register, role, serve, signIn, skipReason } from './browser.ts';

t.test('sign-in, roles, CSRF and sign-out in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  // With the example third-party feature on: its section joins the menu.
  const { app, base } = await serve(t, { plugins: { hello: { enabled: true } } });
  const adminId = await register(app, 'Alice');
  const helperId = await register(app, 'Bob');
  await register(app, 'Carol');
  await grant(app, adminId, await role(app, 'Admin'));
  await grant(app, helperId, await role(app, 'Support'));
  const context = await browse(t);
  const page = await context.newPage();

  await t.test('a wrong password is refused on the page', async (t) => {
    await signIn(page, base, 'Alice', 'not the password');
    await page.getByRole('alert').waitFor();
    t.match(await page.getByRole('alert').textContent(), /Wrong username or password/);
    t.equal(new URL(page.url()).pathname, '/console/login');
  });

  await t.test('an account without a console role is refused', async (t) => {
    await signIn(page, base, 'Carol');
    await page.getByRole('alert').waitFor();
    t.match(await page.getByRole('alert').textContent(), /no console role/);
  });

  await t.test('support staff see the support sections only', async (t) => {
    await signIn(page, base, 'Bob');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    const menu = await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents();
    t.notOk(menu.includes('Catalogue'), 'no catalogue in the menu');
    const res = await page.goto(`${base}/console/catalogue`);
    t.ok(res?.status() === 403 || res?.status() === 404, 'an admin page is refused');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    t.match(await page.getByRole('status').textContent(), /signed out/);
    const again = await page.goto(`${base}/console`);
    t.equal(new URL(again!.url()).pathname, '/console/login', 'signed out for good');
  });

  await t.test('an admin signs in and sees the dashboard', async (t) => {
    await signIn(page, base, 'Alice');
    await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
    const cookies = await context.cookies(`${base}/console`);
    const session = cookies.find((c) => c.name === 'console_session');
    t.ok(session?.httpOnly, 'the session cookie is HttpOnly');
    t.equal(session?.sameSite, 'Strict');
    t.equal(await page.evaluate('document.cookie.includes("console_session")'), false, 'scripts cannot read it');
  });

  await t.test('a change without the CSRF token is refused', async (t) => {
    const res = await page.evaluate(async () => {
      const r = await fetch('/console/logout', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '_csrf=forged' });
      return { status: r.status, text: await r.text() };
    });
    t.equal(res.status, 403);
    t.match(res.text, /CSRF check failed/);
    await page.goto(`${base}/console`);
    t.equal(new URL(page.url()).pathname, '/console', 'still signed in');
  });

  await t.test('a third-party feature adds its own section', async (t) => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Greetings' }).click();
    await page.getByRole('button', { name: 'Add' }).click();
    await page.locator('#new-greeting-name-error').waitFor();
    t.equal(await page.locator('#new-greeting-name-error').textContent(), 'name is required', "the API's message beside the field");
    t.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'new-greeting-name', 'focus moves to the field in error');
    await page.getByRole('textbox', { name: 'Name' }).fill('World');
    await page.getByRole('button', { name: 'Add' }).click();
    await page.getByRole('status').waitFor();
    t.ok(await page.getByRole('cell', { name: 'World' }).isVisible());
    t.same(
      (await call(app, '/api/hello/greetings')).json().map((g: { text: string }) => g.text),
      ['Hello, World!'],
      'through the API',
    );
  });

  await t.test('the API sees the same accounts and roles', async (t) => {
    const roles = (await call(app, `/api/users/${helperId}/roles`)).json();
    t.same(
      roles.map((r: { slug?: string; name: string }) => r.name),
      ['Support'],
    );
  });
});
