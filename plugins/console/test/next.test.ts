/** Where the staff sign-in sends back to (`next`): only to a path of the console, written percent-encoded; never elsewhere, never a fault. */
import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import { PASSWORD, register } from './browser.ts';

t.test('the sign-in form sends staff only to a path of the console', async (t) => {
  const app = await build(t, { config: { plugins: { console: { signInRateLimit: { max: 100, windowSeconds: 600 } } } } });
  const id = await register(app, 'Fay');
  await call(app, '/api/admin/roles', { body: { name: 'Admin', slug: 'admin' } });
  await call(app, `/api/users/${id}/roles`, { body: { roleID: (await call(app, '/api/admin/roles')).json()[0].id } });
  const signIn = async (query: string) => {
    const form = await app.inject('/console/login');
    const cookie = String(form.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="_csrf" value="([0-9a-f]+)"/.exec(form.body)![1]!;
    return app.inject({
      method: 'POST',
      url: `/console/login?${query}`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, username: 'Fay', password: PASSWORD }).toString(),
    });
  };
  const cases: [string, string][] = [
    ['/console/\t/evil.example', '/console'],
    ['/\t/evil.example', '/console'],
    ['/console\\evil.example', '/console'],
    ['//evil.example', '/console'],
    ['/console/.//evil.example', '/console//evil.example'],
    ['https://evil.example/console', '/console'],
    ['/console/\r\nSet-Cookie:x=1', '/console'],
    ['/console/\r/evil', '/console'],
    ['/console/../api/users', '/console'],
    ['/consoleevil', '/console'],
    ['/console/é', '/console/%C3%A9'],
    ['/console/orders?q=1', '/console/orders?q=1'],
  ];
  for (const [next, landing] of cases) {
    const res = await signIn(`next=${encodeURIComponent(next)}`);
    t.equal(res.statusCode, 303, `${JSON.stringify(next)}: signed in, no fault`);
    t.equal(res.headers.location, landing, JSON.stringify(next));
  }
  const raw = await signIn('next=/console/%0d%0aSet-Cookie:x=1');
  t.equal(raw.headers.location, '/console', 'a line break sent unencoded in the address');
  t.equal((await signIn('next=/console/orders&next=//evil.example')).statusCode, 303, 'next sent twice: no fault');
});
