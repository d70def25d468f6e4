/** Where sign-in sends a player back (`next`): only to a path of this storefront, written percent-encoded; never elsewhere, never a fault. */
import t from 'tap';
import { build } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';

const PASSWORD = 'correct horse 1';

/** `next` as the query decodes it, and where the player lands: the account page when it is not a path of the shop. */
const CASES: [string, string][] = [
  ['/\t/evil.example', '/account'],
  ['/\\evil.example', '/account'],
  ['//evil.example', '/account'],
  ['/.//evil.example', '/account'],
  ['https://evil.example', '/account'],
  ['/\r\nSet-Cookie:x=1', '/account'],
  ['/\r/evil', '/account'],
  ['/\u00a0/evil.example', '/account'],
  ['/%0d%0aSet-Cookie:x=1', '/%0d%0aSet-Cookie:x=1'],
  ['/é', '/%C3%A9'],
  ['/€?q=ü', '/%E2%82%AC?q=%C3%BC'],
  ['/basket?x=1', '/basket?x=1'],
];

t.test('GET /login signed in, and the sign-in form, send a player only to a path of the shop', async (t) => {
  const app = await build(t, { config: { plugins: { storefront: { rateLimit: { signIn: { max: 100 } } } } } });
  const v = new Visitor(app);
  await v.post('/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org' });
  for (const [next, landing] of CASES) {
    const res = await v.get(`/login?next=${encodeURIComponent(next)}`);
    t.equal(res.statusCode, 303, `GET ${JSON.stringify(next)}: a redirect, no fault`);
    t.equal(res.headers.location, landing, `GET ${JSON.stringify(next)}`);
  }
  const raw = await v.get('/login?next=/%0d%0aSet-Cookie:x=1');
  t.equal(raw.headers.location, '/account', 'a line break sent unencoded in the address');
  t.notOk(
    [raw.headers['set-cookie']].flat().some((c) => String(c).startsWith('x=')),
    "no header of the sender's",
  );

  for (const [next, landing] of CASES) {
    const fresh = new Visitor(app);
    const res = await fresh.post(`/login?next=${encodeURIComponent(next)}`, { username: 'Steve', password: PASSWORD });
    t.equal(res.statusCode, 303, `POST ${JSON.stringify(next)}: signed in, no fault`);
    t.equal(res.headers.location, landing, `POST ${JSON.stringify(next)}`);
  }
  const both = await new Visitor(app).post('/login?next=/basket&next=//evil.example', { username: 'Steve', password: PASSWORD });
  t.equal(both.statusCode, 303, 'next sent twice: no fault');
  t.notMatch(String(both.headers.location), /evil/);
});

t.test('under a prefix, only paths under it', async (t) => {
  const app = await build(t, { config: { plugins: { storefront: { prefix: '/shop' } } } });
  const v = new Visitor(app);
  await v.get('/shop');
  await v.post('/shop/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org' });
  const cases: [string, string][] = [
    ['/shop/basket', '/shop/basket'],
    ['/shop', '/shop'],
    ['/api/users', '/shop/account'],
    ['/shop/../api/users', '/shop/account'],
    ['/shop/%2e%2e/api', '/shop/account'],
    ['/shop/\t/evil.example', '/shop/account'],
  ];
  for (const [next, landing] of cases) t.equal((await v.get(`/shop/login?next=${encodeURIComponent(next)}`)).headers.location, landing, next);
});
