/**
 * The hello plugin's console section in Chromium: listed in the staff console's menu, its page
 * renders its blocks and its form adds a greeting. HELLO_PACKAGE names the package to load (CI's
 * scripts/plugin-packages.sh sets it to the one installed from its tarball); else the example's build.
 */
import t from 'tap';
import { browse, consoleSignIn, grant, hasChromium, notice, register, role, serve, skipReason } from './browser.ts';
import { call } from './helper.ts';

const hello = { enabled: true, ...(process.env.HELLO_PACKAGE ? { package: process.env.HELLO_PACKAGE } : {}) };

t.test("a plugin package's console section renders and its form works", { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base } = await serve(t, { plugins: { hello } });
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const page = await (await browse(t)).newPage();
  await consoleSignIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Greetings' }).click();
  await page.getByRole('heading', { name: 'Greetings', level: 1 }).waitFor();
  const form = page.locator('#new-greeting');
  await form.getByLabel('Name').fill('Steve');
  await form.getByRole('button', { name: 'Add' }).click();
  await notice(page, /Greeting added/);
  t.equal(await page.getByRole('table', { name: 'Names greeted' }).getByRole('cell', { name: 'Steve' }).count(), 1, 'its table lists the new name');
  t.same((await call(app, '/api/hello/greetings')).json(), [{ id: '1', text: 'Hello, Steve!' }], 'stored in its own table');
});
