/** The storefront through HTTP: switching it off, its prefix, theme folder, languages, SEO, cookies, CSRF, what never shows, rate limits. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { balanceOf, makeCategory, makeProduct, rowCount } from '../../../test/fixtures.ts';
import { creditsRef } from '../../credits/contract.ts';
import { build, call, scratchDir } from '../../../test/helper.ts';
import { LANGUAGES } from '../messages.ts';
import { Visitor } from '../../../test/visitor.ts';

const PASSWORD = 'correct horse 1';

async function catalogue(app: Awaited<ReturnType<typeof build>>) {
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const hidden = await makeCategory(app, { name: 'Secret', slug: 'secret', isActive: '0' });
  const under = await makeCategory(app, { name: 'Under secret', slug: 'under', parentID: String(hidden) });
  const vip = await makeProduct(app, {
    categoryID: ranks,
    name: 'VIP',
    price: '5.00',
    isFeaturedProduct: '1',
    details: '<p>Fly <script>alert(1)</script><b onclick="x()">now</b></p>',
  });
  const off = await makeProduct(app, { categoryID: ranks, name: 'Retired rank', price: '1.00', isActive: '0' });
  const inHidden = await makeProduct(app, { categoryID: under, name: 'Hidden gem', price: '1.00', isFeaturedProduct: '1' });
  return { ranks, hidden, under, vip, off, inHidden };
}

t.test("switched off, the storefront's addresses answer 404 as before", async (t) => {
  const app = await build(t, { config: { plugins: { storefront: { enabled: false } } } });
  for (const url of ['/', '/login', '/basket', '/sitemap.xml', '/robots.txt']) {
    const res = await app.inject(url);
    t.equal(res.statusCode, 404, url);
    t.equal(res.json().error, 'NOT_FOUND', `${url}: the API's JSON`);
  }
});

t.test('pages, SEO, security headers and what never shows', async (t) => {
  const app = await build(t);
  const ids = await catalogue(app);
  const v = new Visitor(app);

  const home = await v.get('/');
  t.equal(home.statusCode, 200);
  t.match(home.body, /<title>Welcome · Community Store<\/title>/, 'the site title from the settings');
  t.match(home.body, /<meta name="description" content="Ranks, items and more/);
  t.match(home.body, /<link rel="canonical" href="http:\/\/localhost:80\/">/);
  t.match(home.body, />VIP</, 'a featured product');
  t.notMatch(home.body, /Secret|Retired|Hidden gem/, 'nothing inactive, nor under an inactive category');
  t.notMatch(home.body, /<script(?![^>]*\bsrc=)/, 'no inline script');
  t.notMatch(home.body, /\sstyle=/, 'no inline style');
  const csp = String(home.headers['content-security-policy']);
  t.match(csp, /script-src 'self'/);
  t.notMatch(csp, /unsafe-inline/);
  const cookie = [home.headers['set-cookie']].flat().find((c) => String(c).startsWith('storefront_csrf='))!;
  t.match(cookie, /HttpOnly/);
  t.match(cookie, /SameSite=Lax/);

  const product = await v.get(`/product/${ids.vip}`);
  t.equal(product.statusCode, 200);
  t.match(product.body, /<p>Fly <b>now<\/b><\/p>/, 'the description sanitised: no script, no handler');
  t.match(product.body, /<meta name="description" content="Fly now">/, 'its meta description is its text');
  const hidden: [string, string][] = [
    [`/product/${ids.off}`, 'an inactive product'],
    [`/product/${ids.inHidden}`, 'a product of a hidden category'],
    [`/category/${ids.hidden}`, 'an inactive category'],
    [`/category/${ids.under}`, 'a category under an inactive one'],
    ['/product/abc', 'a bad id'],
  ];
  for (const [url, what] of hidden) {
    const res = await v.get(url);
    t.equal(res.statusCode, 404, what);
    t.match(res.body, /Not found/, `${what}: a page`);
  }
  t.notMatch((await v.get('/search?q=e')).body, /Retired|Hidden/, 'search: too short');
  const search = await v.get('/search?q=RE');
  t.notMatch(search.body, /Retired rank|Hidden gem/, 'search finds nothing inactive');
  t.match((await v.get('/search?q=vi')).body, /href="\/product\/\d+"/, 'search by name, any case');

  const sitemap = await v.get('/sitemap.xml');
  t.match(sitemap.headers['content-type'], /xml/);
  t.match(sitemap.body, `<loc>http://localhost:80/product/${ids.vip}</loc>`);
  t.match(sitemap.body, `<loc>http://localhost:80/category/${ids.ranks}</loc>`);
  t.notMatch(sitemap.body, new RegExp(`/product/(${ids.off}|${ids.inHidden})<|/category/(${ids.hidden}|${ids.under})<`), 'nothing hidden in the sitemap');
  const robots = await v.get('/robots.txt');
  t.match(robots.body, /Disallow: \/account/);
  t.match(robots.body, /Sitemap: http:\/\/localhost:80\/sitemap.xml/);

  t.equal((await app.inject('/api/nothing-here')).json().error, 'INVALID_API_KEY', 'the API keeps its answers');
  t.equal((await call(app, '/api/nothing-here')).json().error, 'NOT_FOUND');
});

t.test('a prefix, a theme folder and the site settings', async (t) => {
  const theme = join(scratchDir(t), 'theme');
  mkdirSync(theme);
  writeFileSync(join(theme, 'home.eta'), '<h1>Our own home</h1><p><%= it.t("home.featured") %></p>');
  writeFileSync(join(theme, 'storefront.css'), 'body { background: black; }');
  const app = await build(t, { config: { plugins: { storefront: { prefix: '/shop', themeDir: theme, publicUrl: 'https://play.example.org' } } } });
  t.equal((await app.inject('/')).statusCode, 404, 'nothing at the root');
  const res = await app.inject('/shop');
  t.equal(res.statusCode, 200);
  t.match(res.body, /<h1>Our own home<\/h1>/, "the theme's template wins");
  t.match(res.body, /href="\/shop\/basket"/, 'the layout is the default one, links under the prefix');
  t.match(res.body, /<link rel="canonical" href="https:\/\/play.example.org\/shop">/);
  t.equal((await app.inject('/shop/assets/storefront.css')).body, 'body { background: black; }', "the theme's stylesheet wins");
  t.equal((await app.inject('/shop/no-such-page')).statusCode, 404);
  t.match((await app.inject('/shop/no-such-page')).body, /<h1>Not found<\/h1>/, 'a page, not JSON, under the prefix');

  await call(app, '/api/admin/settings', {
    method: 'PATCH',
    as: 'json',
    body: {
      storefrontTitle: "Steve's Store",
      storefrontAccent: '#aa0000',
      storefrontFooterLinks: 'Rules=/rules | Discord=https://discord.gg/abc | bad=javascript:alert(1)',
      storefrontLogo: 'https://cdn.example.org/logo.png',
    },
  });
  const after = await app.inject('/shop/basket');
  t.match(after.body, /<title>Basket · Steve&#39;s Store<\/title>/);
  t.match(after.body, /<a href="\/rules">Rules<\/a>/);
  t.match(after.body, /<a href="https:\/\/discord.gg\/abc">Discord<\/a>/);
  t.notMatch(after.body, /javascript:/, 'a link that is no address is left out');
  t.match(after.body, /<img src="https:\/\/cdn.example.org\/logo.png"/);
  t.match(String(after.headers['content-security-policy']), /img-src 'self' data: https:\/\/cdn.example.org;/, "the logo's host is allowed, nothing else");
  t.match((await app.inject('/shop/assets/theme.css')).body, /--accent: #aa0000/, 'the colours as a stylesheet');

  await t.rejects(build(t, { config: { plugins: { storefront: { themeDir: join(theme, 'missing') } } } }), /plugins.storefront.themeDir: there is no folder/);
});

t.test('languages: complete catalogues, the browser picks, the setting sets the default', async (t) => {
  for (const [lang, catalogue] of Object.entries(LANGUAGES)) {
    t.same(Object.keys(catalogue).sort(), Object.keys(LANGUAGES.en).sort(), `${lang} has every message`);
    t.notOk(
      Object.values(catalogue).some((m) => !m.trim()),
      `${lang}: none empty`,
    );
  }
  const app = await build(t);
  t.match(
    (await app.inject({ url: '/basket', headers: { 'accept-language': 'de-AT,de;q=0.9,en;q=0.5' } })).body,
    /<html lang="de">[\s\S]*Dein Warenkorb ist leer/,
  );
  t.match((await app.inject({ url: '/basket', headers: { 'accept-language': 'fr, en;q=0.3' } })).body, /<html lang="en">[\s\S]*Your basket is empty/);
  await call(app, '/api/admin/settings', { method: 'PATCH', as: 'json', body: { storefrontLanguage: 'de' } });
  t.match((await app.inject({ url: '/basket', headers: { 'accept-language': 'fr' } })).body, /<html lang="de">/, 'none we have: the default');
  t.match((await app.inject('/basket')).body, /<html lang="de">/);
});

t.test('forms: a post without the CSRF token changes nothing; sign-in and register are rate limited per address', async (t) => {
  const app = await build(t, { config: { plugins: { storefront: { rateLimit: { signIn: { max: 2 }, register: { max: 4 } } } }, site: { registerLimit: 1 } } });
  const v = new Visitor(app);
  await v.get('/register');
  const forged = await v.post('/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org', _csrf: 'f'.repeat(64) }, { csrf: false });
  t.equal(forged.statusCode, 403);
  t.match(forged.body, /This form expired/);
  t.equal(await rowCount(app, 'users_accounts'), 0, 'no account was made');

  const bad = await v.post('/register', { username: 'x', password: PASSWORD, email: 'steve@example.org' });
  t.equal(bad.statusCode, 422);
  t.match(bad.body, /id="f-username-error">Use 3 to 16 letters/, "the API's username rule, beside the field");
  const ok = await v.post('/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org' });
  t.equal(ok.statusCode, 303);
  t.ok(v.cookies.get('storefront_session'), 'signed in');
  const limited = await new Visitor(app).post('/register', { username: 'Alex', password: PASSWORD, email: 'alex@example.org' });
  t.equal(limited.statusCode, 422);
  t.match(limited.body, /No more accounts may be registered from your address/, "the API's accounts-per-ip limit");
  const flood = await new Visitor(app).post('/register', { username: 'Alex', password: PASSWORD, email: 'alex@example.org' });
  t.equal(flood.statusCode, 429, 'the fifth register from one address in the window (the refused ones count)');

  const s = new Visitor(app);
  t.equal((await s.post('/login', { username: 'Steve', password: 'wrong' })).statusCode, 401);
  t.equal((await s.post('/login', { username: 'Steve', password: PASSWORD })).statusCode, 303);
  const third = await s.post('/login', { username: 'Steve', password: PASSWORD });
  t.equal(third.statusCode, 429);
  t.match(third.body, /Too many attempts/);
  t.notOk((await call(app, '/api/users?username=Steve')).json().id === undefined, 'the account is there');
});

t.test('the basket: a tampered cookie is an empty basket, prices come from the catalogue, checkout is rate limited', async (t) => {
  const app = await build(t, { config: { plugins: { storefront: { rateLimit: { checkout: { max: 2 } } } } } });
  const ranks = await makeCategory(app, { name: 'Ranks', slug: 'ranks' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '5.00' });
  const v = new Visitor(app);
  await v.post('/register', { username: 'Steve', password: PASSWORD, email: 'steve@example.org' });
  const steve = Number((await call(app, '/api/users?username=Steve')).json().id);
  await app.services.get(creditsRef).change(steve, 1000, { reason: 'add' });

  for (const junk of ['%%%', Buffer.from('{"a":1}').toString('base64url'), Buffer.from('[[1,1e9,{}],[-1,1,{}],["1",1,{}]]').toString('base64url')]) {
    v.cookies.set('storefront_basket', junk);
    const res = await v.get('/basket');
    t.equal(res.statusCode, 200, 'no fault');
    t.match(res.body, /Your basket is empty/, `a cookie of ${junk.slice(0, 12)}… holds nothing`);
  }
  t.equal((await v.post('/basket/add', { product: String(vip), quantity: '101' })).statusCode, 422, 'a quantity the buy refuses');
  t.equal((await v.post('/basket/add', { product: String(vip), quantity: '2' })).statusCode, 303);
  await call(app, `/api/admin/store/products/${vip}`, { method: 'PATCH', as: 'json', body: { price: '3.00' } });
  const pay = await v.post('/checkout', {});
  t.equal(pay.statusCode, 303, 'paid');
  t.equal(await balanceOf(app, steve), 400, "at the catalogue's price when paying, not the one shown before");
  const orderPage = String(pay.headers.location);
  t.match(orderPage, /^\/account\/orders\/\d+$/);

  const other = new Visitor(app);
  await other.post('/register', { username: 'Alex', password: PASSWORD, email: 'alex@example.org' });
  t.equal((await other.get(orderPage)).statusCode, 404, "another player's order is not found");
  t.equal((await v.get(orderPage)).statusCode, 200, "the buyer's is");
  t.equal((await new Visitor(app).get(orderPage)).statusCode, 303, 'signed out: to the sign-in page');

  await v.post('/basket/add', { product: String(vip), quantity: '5' });
  const poor = await v.post('/checkout', {});
  t.equal(poor.statusCode, 409);
  t.match(poor.body, /Your balance is too low/, "the buy's refusal, in words");
  t.equal(await balanceOf(app, steve), 400, 'nothing was charged');
  t.equal((await v.post('/checkout', {})).statusCode, 429, 'the third checkout in the window');
});

t.test('a catalogue page reads the categories once: what it shows and what is on show come from the same read', async (t) => {
  const app = await build(t);
  const ids = await catalogue(app);
  const v = new Visitor(app);
  const reads: string[] = [];
  const queryArrays = app.db.queryArrays.bind(app.db);
  app.db.queryArrays = (statement) => {
    if (/from `store_categories`/.test(statement.text)) reads.push(statement.text);
    return queryArrays(statement);
  };
  for (const [url, shows] of [
    ['/', />VIP</],
    [`/category/${ids.ranks}`, />VIP</],
    [`/product/${ids.vip}`, /Fly/],
  ] as const) {
    reads.length = 0;
    const res = await v.get(url);
    t.match(res.body, shows, url);
    t.equal(reads.length, 1, `${url}: one read of the categories`);
  }
  app.db.queryArrays = queryArrays;
  t.equal((await v.get(`/product/${ids.inHidden}`)).statusCode, 404, 'what the page read still hides a branch');
});
