/**
 * The storefront's pages a visitor opens most: the home page, a category and a product. The
 * baseline reads the same rows by hand and renders the same templates with eta into the same
 * HTML (the runner checks it is the same, byte for byte), with the same message catalogue,
 * money format and description sanitiser.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Eta } from 'eta';
import type { FastifyRequest } from 'fastify';
import { rootDir } from '../core/config.ts';
import { displayTimestamp, now, PERMANENT } from '../core/format.ts';
import { plainText, sanitise } from '../plugins/storefront/catalogue.ts';
import { translator } from '../plugins/storefront/messages.ts';
import type { BaseDb, Row } from './base-db.ts';
import { Api, type BenchRequest, type Scenario } from './scenario.ts';
import { seedCatalogue } from './store.ts';

/** A visitor who has a page open already: the CSRF cookie is there, so the page sets none. */
const CSRF = 'c'.repeat(64);
const HEADERS = { cookie: `storefront_csrf=${CSRF}`, 'accept-language': 'en-GB,en;q=0.9' };

const VIEWS = join(rootDir, 'plugins/storefront/views');
const eta = new Eta({ autoEscape: true, cache: true });
for (const file of readdirSync(VIEWS).filter((f) => f.endsWith('.eta')))
  eta.loadTemplate(`@${basename(file, '.eta')}`, readFileSync(join(VIEWS, file), 'utf8'));

const t = translator('en');
const usd = new Intl.NumberFormat('en', { style: 'currency', currency: 'USD' });
const money = (cents: number) => usd.format(cents / 100);
const u = (path: string) => path;
const SITE = { title: 'Community Store', logo: '', links: [], currency: 'USD' };
const THEME_VERSION = Buffer.from('#0b4ea2|#ffffff').toString('base64url');
const LANGUAGES = [
  ['en', 'English'],
  ['de', 'Deutsch'],
] as const;

/** The biggest sale running, as the banner says it (the site's time zone is UTC). */
async function saleBanner(db: BaseDb): Promise<{ text: string } | undefined> {
  const at = now();
  const [sale] = await db.all(
    'select name, percent, end_date from promotions_sales where is_active = 1 and start_date <= ? and end_date > ? order by percent desc, id limit 1',
    [at, at],
  );
  return sale && { text: t('sale.banner', { name: sale.name, percent: sale.percent, end: String(sale.end_date).slice(0, 16) }) };
}

/** The page in the layout, as the server renders it for a visitor who is not signed in. */
function page(request: FastifyRequest, template: string, meta: { title: string; description: string; canonical: string }, data: object): string {
  // The header's language switch: this page again in each language.
  const path = request.url.split('?')[0]!;
  const languages = LANGUAGES.map(([code, name]) => ({ code, name, href: `${path}?lang=${code}`, current: code === 'en' }));
  const common = { lang: 'en', t, u, csrf: CSRF, user: undefined, site: SITE, languages };
  const body = eta.render(`@${template}`, { ...common, ...data });
  return eta.render('@layout', {
    ...common,
    ...data,
    body,
    title: meta.title,
    description: meta.description,
    noindex: false,
    canonical: `${request.protocol}://${request.host}${meta.canonical}`,
    notice: undefined,
    alert: undefined,
    basketCount: 0,
    themeVersion: THEME_VERSION,
  });
}

const CATEGORIES = 'select id, parent_id, name, game_description from store_categories where is_active = 1 order by priority, id';
const PRODUCT_COLUMNS = 'id, category_id, name, details, price, discounted_price, discount_expiry_date, stock';
const VARIABLES = (where: string) =>
  `select product_id, name, \`required\`, allowed_values from store_product_variables where product_id in (select id from ` +
  `store_products where ${where}) order by product_id, \`position\``;

/** Active categories whose every parent is active too. */
function visible(categories: Row[]): Map<number, Row> {
  const byId = new Map(categories.map((c) => [Number(c.id), c]));
  const shown = (c: Row): boolean => Number(c.parent_id) === 0 || (byId.has(Number(c.parent_id)) && shown(byId.get(Number(c.parent_id))!));
  return new Map(categories.filter(shown).map((c) => [Number(c.id), c]));
}

async function products(db: BaseDb, where: string, params: number[]) {
  const [rows, variables] = await Promise.all([
    db.all(`select ${PRODUCT_COLUMNS} from store_products where ${where} order by priority, id`, params),
    db.all(VARIABLES(where), params),
  ]);
  const varsOf = new Map<number, object[]>();
  for (const v of variables) {
    const list = varsOf.get(Number(v.product_id)) ?? [];
    list.push({ name: v.name, required: Boolean(Number(v.required)), values: JSON.parse(v.allowed_values) });
    varsOf.set(Number(v.product_id), list);
  }
  const at = now();
  return rows.map((p) => {
    const price = Number(p.price);
    const live = Number(p.discounted_price) > 0 && (p.discount_expiry_date === PERMANENT || p.discount_expiry_date > at);
    const cents = live ? Number(p.discounted_price) : price;
    return {
      row: p,
      view: {
        id: Number(p.id),
        name: p.name,
        cents,
        price: money(cents),
        soldOut: Number(p.stock) === 0,
        variables: varsOf.get(Number(p.id)) ?? [],
        ...(live ? { was: money(price) } : {}),
        ...(live && p.discount_expiry_date !== PERMANENT ? { until: displayTimestamp(p.discount_expiry_date, 'UTC').slice(0, 16) } : {}),
        ...(Number(p.stock) > 0 ? { stock: Number(p.stock) } : {}),
        image: undefined,
        details: '',
      },
    };
  });
}

const named = (c: Row) => ({ id: Number(c.id), name: c.name });

function crumbs(shown: Map<number, Row>, id: number): Row[] {
  const path: Row[] = [];
  for (let c = shown.get(id); c; c = Number(c.parent_id) === 0 ? undefined : shown.get(Number(c.parent_id))) path.unshift(c);
  return path;
}

async function home(db: BaseDb, request: FastifyRequest) {
  const monthStart = `${now().slice(0, 7)}-01 00:00:00`;
  const [categories, featured, top, latest, votes, sale] = await Promise.all([
    db.all(CATEGORIES),
    products(db, 'is_featured = 1 and is_active = 1', []),
    // Guests (user 0) count per name typed at checkout, as the server's board counts them.
    db.all(
      `select max(username) as username, sum(amount) as amount, currency, max(creation_date) as last from donations_entries where creation_date >= ?
      group by user_id, case when user_id = 0 then username else '' end, currency order by sum(amount) desc, max(creation_date), user_id limit ?`,
      [monthStart, 5],
    ),
    db.all('select username, amount from donations_entries order by creation_date desc, id desc limit ?', [5]),
    db.all('select id, name, link from votes_links order by id'),
    saleBanner(db),
  ]);
  const shown = visible(categories);
  const board = (rows: Row[]) => rows.map((d) => ({ username: d.username, amount: money(Number(d.amount)) }));
  return page(
    request,
    'home',
    { title: 'Welcome', description: 'Ranks, items and more for our game server.', canonical: '/' },
    {
      featured: featured.filter((p) => shown.has(Number(p.row.category_id))).map((p) => p.view),
      categories: [...shown.values()].filter((c) => Number(c.parent_id) === 0).map(named),
      boards: { top: board(top), latest: board(latest) },
      votes: votes.map((v) => ({ id: String(v.id), name: v.name, link: String(v.link).replaceAll('{username}', '') })),
      sale,
    },
  );
}

async function category(db: BaseDb, request: FastifyRequest<{ Params: { id: string } }>) {
  const id = Number(request.params.id);
  const [categories, list, sale] = await Promise.all([db.all(CATEGORIES), products(db, 'category_id in (?) and is_active = 1', [id]), saleBanner(db)]);
  const shown = visible(categories);
  const path = crumbs(shown, id);
  const c = path.at(-1)!;
  return page(
    request,
    'category',
    { title: c.name, description: c.game_description || `${c.name} · ${SITE.title}`, canonical: `/category/${id}` },
    {
      category: named(c),
      crumbs: path.slice(0, -1).map(named),
      subcategories: [...shown.values()].filter((s) => Number(s.parent_id) === id).map(named),
      products: list.map((p) => p.view),
      sale,
      side: [...shown.values()]
        .filter((s) => Number(s.parent_id) === 0)
        .map((s) => ({ ...named(s), current: Number(s.id) === id ? 'page' : Number(s.id) === Number(path[0]!.id) ? 'true' : '' })),
    },
  );
}

async function product(db: BaseDb, request: FastifyRequest<{ Params: { id: string } }>) {
  const id = Number(request.params.id);
  const [categories, [found], rules] = await Promise.all([
    db.all(CATEGORIES),
    products(db, 'id in (?) and is_active = 1', [id]),
    db.all('select required_product_id, require_linked_account, prevent_downgrade from store_product_rules where product_id in (?)', [id]),
  ]);
  const p = found!;
  const path = crumbs(visible(categories), Number(p.row.category_id));
  const said: string[] = [];
  if (rules[0] && Number(rules[0].require_linked_account)) said.push(t('product.rule.linked'));
  return page(
    request,
    'product',
    { title: p.view.name, description: plainText(p.row.details, 155) || p.view.name, canonical: `/product/${id}` },
    {
      p: { ...p.view, details: sanitise(p.row.details) },
      rules: said,
      crumbs: path.map(named),
      maxQuantity: 100,
    },
  );
}

/** A shop: nested categories of products with descriptions, discounts, stock and variables, some featured; vote links and donations. */
async function seed(api: Api): Promise<{ categoryId: string; productId: string }> {
  const { categoryIds, productIds } = await seedCatalogue(api, 8, 24);
  for (const name of ['Server List', 'Top Servers'])
    await api.create('/api/admin/vote-links', { name, link: `https://${name.replace(' ', '').toLowerCase()}.example/vote?u={username}` });
  await Api.batched(6, 3, async (i) => {
    await api.player(5000 + i, `donor${i}`, 0);
    await api.send('POST', '/api/admin/payments', { username: `donor${i}`, amount: `${5 + i}.00`, currency: 'USD', paymentID: `bench-${i}` });
  });
  return { categoryId: categoryIds[2]!, productId: productIds[2 * 24]! };
}

/** One shop per database: a full run seeds SQLite's, then MariaDB's, each through its own server's Api. */
const seeded = new WeakMap<Api, Promise<{ categoryId: string; productId: string }>>();
const once = (api: Api) => {
  let shop = seeded.get(api);
  if (!shop) seeded.set(api, (shop = seed(api)));
  return shop;
};
const get = (path: string): BenchRequest[] => [{ method: 'GET', path, headers: HEADERS }];

export const scenarios: Scenario[] = [
  {
    name: 'storefront/home',
    readOnly: true,
    async seed(api) {
      await once(api);
      return get('/');
    },
    baseline: { method: 'GET', url: '/', handler: async (db, request, reply) => reply.type('text/html; charset=utf-8').send(await home(db, request)) },
  },
  {
    name: 'storefront/category',
    readOnly: true,
    async seed(api) {
      return get(`/category/${(await once(api)).categoryId}`);
    },
    baseline: {
      method: 'GET',
      url: '/category/:id',
      handler: async (db, request, reply) =>
        reply.type('text/html; charset=utf-8').send(await category(db, request as FastifyRequest<{ Params: { id: string } }>)),
    },
  },
  {
    name: 'storefront/product',
    readOnly: true,
    async seed(api) {
      return get(`/product/${(await once(api)).productId}`);
    },
    baseline: {
      method: 'GET',
      url: '/product/:id',
      handler: async (db, request, reply) =>
        reply.type('text/html; charset=utf-8').send(await product(db, request as FastifyRequest<{ Params: { id: string } }>)),
    },
  },
];
