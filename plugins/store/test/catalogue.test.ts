import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { count, fields, sql } from '../../../core/sql.ts';
import { apiKey, call } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { StoreProduct, StoreProductVariable } from '../entities.ts';
import { makeCategory, makeProduct, makeRole, makeUser, storeApp } from './fixtures.ts';

const CATEGORY_KEYS = [
  'id',
  'parentID',
  'name',
  'slug',
  'imageID',
  'imageType',
  'priority',
  'gameStatus',
  'gameTitle',
  'gameDescription',
  'gameItem',
  'isActive',
  'gameItemModelID',
  'isCumulative',
];
const PRODUCT_KEYS = [
  'id',
  'categoryID',
  'giveRoleID',
  'name',
  'imageID',
  'imageType',
  'details',
  'price',
  'discountedPrice',
  'discountExpiryDate',
  'duration',
  'stock',
  'priority',
  'isFeaturedProduct',
  'gameStatus',
  'gameTitle',
  'gameDescription',
  'gameItem',
  'isActive',
  'creationDate',
  'variables',
  'gameItemModelID',
  'requireOnlyOneProduct',
];

/** Every value of a row is a JSON string (decisions.md §2), except the nested lists named. */
function allStrings(t: { type(v: unknown, type: string, message: string): unknown }, row: Record<string, unknown>, except: string[] = []) {
  for (const [k, v] of Object.entries(row)) if (!except.includes(k)) t.type(v, 'string', `${k} is a string`);
}

t.test('categories: create, change, move, reorder, deactivate, delete', async (t) => {
  const app = await storeApp(t);
  let res = await call(app, '/api/admin/store/categories', { body: { name: 'VIP Ranks!' } });
  t.equal(res.statusCode, 201);
  const ranks = res.json();
  t.same(Object.keys(ranks).sort(), [...CATEGORY_KEYS].sort());
  allStrings(t, ranks);
  t.match(ranks, { parentID: '0', name: 'VIP Ranks!', slug: 'vip-ranks', priority: '0', isActive: '1', gameStatus: '1' });

  res = await call(app, '/api/admin/store/categories', {
    body: { name: 'Monthly', parentID: ranks.id, priority: '5', gameItem: 'DIAMOND', isActive: 'true' },
    as: 'urlencoded',
  });
  t.equal(res.statusCode, 201);
  const monthly = res.json();
  t.match(monthly, { parentID: ranks.id, priority: '5', gameItem: 'DIAMOND', isActive: '1' });
  const deep = await makeCategory(app, { name: 'Deep', parentID: monthly.id });

  res = await call(app, '/api/admin/store/categories', { body: { name: 'Orphan', parentID: '999' } });
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'CATEGORY_NOT_FOUND');
  res = await call(app, '/api/admin/store/categories', { body: { slug: 'x' } });
  t.match(res.json(), { status: false, error: 'VALIDATION_ERROR', message: /name/ });
  res = await call(app, '/api/admin/store/categories', { body: { name: 'Bad', priority: 'high' } });
  t.match(res.json(), { error: 'VALIDATION_ERROR', message: /priority/ });

  // The tree stays a tree: no category under itself or under one of its own descendants.
  for (const parentID of [ranks.id, String(deep)]) {
    res = await call(app, `/api/admin/store/categories/${ranks.id}`, { method: 'PATCH', body: { parentID } });
    t.equal(res.json().error, 'VALIDATION_ERROR', `moving under ${parentID} is refused`);
  }
  res = await call(app, `/api/admin/store/categories/${deep}`, { method: 'PATCH', body: { parentID: '0', isActive: '0', name: 'Top' } });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { id: String(deep), parentID: '0', isActive: '0', name: 'Top', slug: 'deep' });
  res = await call(app, `/api/admin/store/categories/${deep}`);
  t.match(res.json(), { isActive: '0', name: 'Top' }, 'the change is stored');

  res = await call(app, '/api/admin/store/categories/reorder', { body: { ids: [String(deep), ranks.id] } });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: true });
  res = await call(app, '/api/store/categories');
  t.same(
    res.json().map((c: { id: string; priority: string }) => [c.id, c.priority]),
    [
      [String(deep), '0'],
      [ranks.id, '1'],
      [monthly.id, '5'],
    ],
    'flat list ordered by priority, then id; inactive ones included',
  );
  res = await call(app, '/api/admin/store/categories/reorder', { body: { ids: [ranks.id, '999'] } });
  t.equal(res.json().error, 'CATEGORY_NOT_FOUND');
  res = await call(app, `/api/admin/store/categories/${ranks.id}`);
  t.equal(res.json().priority, '1', 'a failed reorder changes nothing');

  res = await call(app, `/api/admin/store/categories/${ranks.id}`, { method: 'DELETE' });
  t.equal(res.statusCode, 409);
  t.equal(res.json().error, 'CONFLICT', 'a category holding subcategories is not deleted');
  res = await call(app, `/api/admin/store/categories/${monthly.id}`, { method: 'DELETE' });
  t.same(res.json(), { status: true });
  res = await call(app, `/api/admin/store/categories/${monthly.id}`, { method: 'DELETE' });
  t.equal(res.json().error, 'CATEGORY_NOT_FOUND');
  for (const id of ['999', 'abc']) {
    res = await call(app, `/api/store/categories/${id}`);
    t.equal(res.statusCode, 404);
    t.equal(res.json().error, 'CATEGORY_NOT_FOUND', `GET /api/store/categories/${id}`);
  }

  const key = await apiKey(app);
  res = await call(app, '/api/admin/store/categories', { body: { name: 'Nope' }, key });
  t.equal(res.statusCode, 403, 'admin routes need the admin scope');
  res = await call(app, '/api/store/categories', { key });
  t.equal(res.statusCode, 200, 'the public routes do not');
});

t.test('products: every field, variables, validation, delete', async (t) => {
  const app = await storeApp(t);
  await app.settings.update({ timezone: 'Europe/Berlin' });
  const category = await makeCategory(app, { name: 'Ranks' });
  const role = await makeRole(app, 'VIP');
  const body = {
    categoryID: String(category),
    name: 'VIP 30 days',
    giveRoleID: String(role),
    imageID: '12',
    imageType: 'png',
    details: '<b>VIP</b> for a month',
    price: '9.99',
    discountedPrice: '7.5',
    discountExpiryDate: '2031-06-01 12:00:00',
    duration: '30',
    stock: '10',
    priority: '2',
    isFeaturedProduct: '1',
    gameStatus: '0',
    gameTitle: '&6VIP',
    gameDescription: 'Line 1\nLine 2',
    gameItem: 'GOLD_INGOT',
    isActive: '1',
    variables: [
      { name: 'server', required: '1', values: ['eu', 'na'] },
      { name: 'note', required: 'false' },
    ],
  };
  let res = await call(app, '/api/admin/store/products', { body });
  t.equal(res.statusCode, 201, res.body);
  const product = res.json();
  t.same(Object.keys(product).sort(), [...PRODUCT_KEYS].sort());
  allStrings(t, product, ['variables']);
  const { variables: _v, ...sent } = body;
  t.match(product, { ...sent, price: '9.99', discountedPrice: '7.50', isFeaturedProduct: '1', gameStatus: '0' });
  t.same(product.variables, [
    { name: 'server', required: '1', values: ['eu', 'na'] },
    { name: 'note', required: '0', values: [] },
  ]);
  t.match(product.creationDate, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  const P = StoreProduct.c;
  const [stored] = await app.db.query(
    sql`select ${fields({ discount_expiry_date: P.discountExpiryDate, price: P.price })} from ${StoreProduct} where ${P.id} = ${Number(product.id)}`,
  );
  t.equal(stored!.discount_expiry_date, '2031-06-01 10:00:00', 'times are stored in UTC, shown in the site time zone');
  t.equal(Number(stored!.price), 999, 'money is stored in cents');
  // A whole catalogue's read takes the variables table beside the products, not joined: the same variables, in order.
  const everyProduct = (await call(app, '/api/store/products')).json() as { id: string; variables: unknown[] }[];
  t.same(everyProduct.find((p) => p.id === product.id)?.variables, product.variables, "the catalogue's list gives the variables in their order");
  const listing = (await call(app, '/api/store/listing')).json() as { categories: { products: { id: string; variables: unknown[] }[] }[] };
  t.same(listing.categories.flatMap((c) => c.products).find((p) => p.id === product.id)?.variables, product.variables, 'so does the listing');

  const minimal = await makeProduct(app, { categoryID: category, name: 'Key', price: 1 });
  res = await call(app, `/api/store/products/${minimal}`);
  t.match(
    res.json(),
    {
      giveRoleID: '0',
      price: '1.00',
      discountedPrice: '0.00',
      discountExpiryDate: '1000-01-01 00:00:00',
      duration: '0',
      stock: '-1',
      isActive: '1',
      variables: [],
    },
    'defaults: no role, no discount, the sentinel, unlimited stock',
  );

  const bad: [Record<string, unknown>, string, RegExp][] = [
    [{ price: 'abc' }, 'VALIDATION_ERROR', /price/],
    [{ price: '1.005' }, 'VALIDATION_ERROR', /price/],
    [{ price: '-1' }, 'VALIDATION_ERROR', /price/],
    [{ price: '99999999' }, 'VALIDATION_ERROR', /price/],
    [{ discountedPrice: '20' }, 'VALIDATION_ERROR', /discountedPrice/],
    [{ discountExpiryDate: '2031-02-30 00:00:00' }, 'VALIDATION_ERROR', /discountExpiryDate/],
    [{ discountExpiryDate: 'tomorrow' }, 'VALIDATION_ERROR', /discountExpiryDate/],
    [{ stock: '-2' }, 'VALIDATION_ERROR', /stock/],
    [{ duration: '1.5' }, 'VALIDATION_ERROR', /duration/],
    [{ categoryID: '999' }, 'CATEGORY_NOT_FOUND', /999/],
    [{ giveRoleID: '999' }, 'ROLE_NOT_FOUND', /999/],
    [{ variables: [{ name: 'a' }, { name: 'A' }] }, 'VALIDATION_ERROR', /twice/],
    [{ variables: [{ name: 'bad name' }] }, 'VALIDATION_ERROR', /variables/],
  ];
  for (const [patch, code, message] of bad) {
    res = await call(app, '/api/admin/store/products', { body: { categoryID: category, name: 'X', price: '10', ...patch }, as: 'json' });
    t.match(res.json(), { status: false, error: code, message }, JSON.stringify(patch));
    res = await call(app, `/api/admin/store/products/${product.id}`, { method: 'PATCH', body: patch, as: 'json' });
    t.equal(res.json().error, code, `PATCH ${JSON.stringify(patch)}`);
  }
  res = await call(app, '/api/store/products');
  t.equal(res.json().length, 2, 'no bad product was created');
  res = await call(app, `/api/store/products/${product.id}`);
  t.same(res.json(), product, 'no bad change was stored');

  res = await call(app, `/api/admin/store/products/${product.id}`, {
    method: 'PATCH',
    body: { price: '12', variables: [{ name: 'color', values: ['red'] }] },
    as: 'json',
  });
  t.match(res.json(), { price: '12.00', name: 'VIP 30 days', discountedPrice: '7.50' });
  t.same(res.json().variables, [{ name: 'color', required: '0', values: ['red'] }], 'variables are replaced');
  res = await call(app, `/api/admin/store/products/${product.id}`, { method: 'PATCH', body: { name: 'Renamed' } });
  t.same(res.json().variables, [{ name: 'color', required: '0', values: ['red'] }], 'left alone when not sent');
  res = await call(app, `/api/admin/store/products/${product.id}`, { method: 'PATCH', body: { variables: '' }, as: 'urlencoded' });
  t.same(res.json().variables, [], 'an empty form field clears them');

  res = await call(app, '/api/admin/store/products/reorder', { body: { ids: [minimal, product.id] } });
  t.equal(res.statusCode, 200);
  res = await call(app, '/api/admin/store/products');
  t.same(
    res.json().map((p: { id: string }) => p.id),
    [String(minimal), product.id],
  );

  res = await call(app, `/api/admin/store/categories/${category}`, { method: 'DELETE' });
  t.equal(res.json().error, 'CONFLICT', 'a category holding products is not deleted');
  res = await call(app, `/api/admin/store/products/${product.id}`, { method: 'DELETE' });
  t.same(res.json(), { status: true });
  for (const id of [product.id, 'abc', '0']) {
    res = await call(app, `/api/store/products/${id}`);
    t.equal(res.statusCode, 404);
    t.equal(res.json().error, 'PRODUCT_NOT_FOUND', `GET /api/store/products/${id}`);
  }
  res = await call(app, `/api/admin/store/products/${product.id}`, { method: 'PATCH', body: { name: 'Ghost' } });
  t.equal(res.json().error, 'PRODUCT_NOT_FOUND');
  t.same(await StoreProductVariable.select(app.db, sql`where ${StoreProductVariable.c.productId} = ${Number(product.id)}`), [], 'its variables went with it');
});

t.test('listing: active categories nested to any depth, products with computed fields', async (t) => {
  const app = await storeApp(t);
  const top = await makeCategory(app, { name: 'Top', priority: 2 });
  const first = await makeCategory(app, { name: 'First', priority: 1 });
  const child = await makeCategory(app, { name: 'Child', parentID: top });
  const grandchild = await makeCategory(app, { name: 'Grandchild', parentID: child });
  const hidden = await makeCategory(app, { name: 'Hidden', isActive: false });
  await makeCategory(app, { name: 'Under hidden', parentID: hidden });
  await makeProduct(app, { categoryID: hidden, name: 'In hidden', price: '1' });

  const hour = 3600 * 1000;
  const stamp = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 19).replace('T', ' ');
  const sale = await makeProduct(app, { categoryID: grandchild, name: 'Sale', price: '10', discountedPrice: '7.5' });
  const expired = await makeProduct(app, { categoryID: grandchild, name: 'Expired', price: '10', discountedPrice: '5', discountExpiryDate: stamp(-hour) });
  const soon = await makeProduct(app, {
    categoryID: grandchild,
    name: 'Soon over',
    price: '3',
    discountedPrice: '1',
    discountExpiryDate: stamp(hour),
    stock: 4,
  });
  await makeProduct(app, { categoryID: grandchild, name: 'Off', price: '1', isActive: '0' });

  let res = await call(app, '/api/store/listing');
  t.equal(res.statusCode, 200);
  const { categories } = res.json();
  t.same(
    categories.map((c: { id: string }) => c.id),
    [String(first), String(top)],
    'top level: active only, by priority',
  );
  t.same(categories[0].subcategories, [], 'subcategories always present');
  t.same(categories[0].products, [], 'products always present');
  const leaf = categories[1].subcategories[0].subcategories[0];
  t.equal(leaf.id, String(grandchild), 'nested three deep');
  t.equal(leaf.parentID, String(child));
  allStrings(t, leaf, ['subcategories', 'products']);
  t.same(
    leaf.products.map((p: { id: string }) => p.id),
    [sale, expired, soon].map(String),
    'inactive products are left out',
  );

  const [onSale, wasOnSale, endsSoon] = leaf.products;
  t.match(onSale, {
    price: '10.00',
    discountedPrice: '7.50',
    total: 7.5,
    originalPrice: 10,
    discount: 2.5,
    discountPercent: 25,
    restricted: false,
    totalFormatted: '7.50 USD',
    originalPriceFormatted: '10.00 USD',
  });
  // A string, as the Kotlin wrapper decodes it; the game plugin's getInt reads the digits.
  t.equal(onSale.stock, '-1');
  t.equal(endsSoon.stock, '4');
  t.match(wasOnSale, { total: 10, originalPrice: 10, discount: 0, discountPercent: 0, totalFormatted: '10.00 USD' }, 'an expired discount no longer counts');
  t.match(endsSoon, { total: 1, discount: 2, discountPercent: 67 }, 'a discount counts until it expires');
  for (const p of leaf.products) {
    allStrings(t, p, ['variables', 'total', 'originalPrice', 'discount', 'discountPercent', 'restricted']);
    t.match(p.stock, /^-?[0-9]+$/, 'stock: integer text');
    t.type(p.restricted, 'boolean');
    t.ok(Number.isInteger(p.discountPercent));
  }

  await app.settings.update({ currency: 'EUR' });
  res = await call(app, '/api/store/listing/');
  t.equal(res.json().categories[1].subcategories[0].subcategories[0].products[0].totalFormatted, '7.50 EUR', 'the site currency, trailing slash ignored');

  // /categories/<id>: one category with everything under it, active or not
  res = await call(app, `/api/store/categories/${hidden}`);
  t.equal(res.statusCode, 200);
  t.match(res.json(), {
    id: String(hidden),
    isActive: '0',
    subcategories: [{ name: 'Under hidden', subcategories: [], products: [] }],
    products: [{ name: 'In hidden', price: '1.00', stock: '-1' }],
  });
  res = await call(app, `/api/store/categories/${top}`);
  t.same(
    res.json().subcategories[0].subcategories[0].products.map((p: { name: string }) => p.name),
    ['Sale', 'Expired', 'Soon over', 'Off'],
  );
});

t.test('listing ?username=: restricted marks products whose role the user holds for good', async (t) => {
  const app = await storeApp(t);
  const users = app.services.get(usersRef);
  const forever = await makeRole(app, 'Forever');
  const timed = await makeRole(app, 'Timed');
  const category = await makeCategory(app, { name: 'Ranks' });
  const foreverProduct = await makeProduct(app, { categoryID: category, name: 'Forever', price: '5', giveRoleID: forever, duration: 0 });
  const timedProduct = await makeProduct(app, { categoryID: category, name: 'Timed', price: '5', giveRoleID: timed, duration: 30 });
  const noRole = await makeProduct(app, { categoryID: category, name: 'Plain', price: '5' });
  const steve = await makeUser(app, 'Steve');
  await makeUser(app, 'alex');
  await users.grantRole(steve, forever);
  await users.extendRole(steve, timed, 10);

  const restricted = async (query: string) => {
    const res = await call(app, `/api/store/listing${query}`);
    t.equal(res.statusCode, 200, query);
    return Object.fromEntries(res.json().categories[0].products.map((p: { id: string; restricted: boolean }) => [p.id, p.restricted]));
  };
  t.same(
    await restricted('?username=steve'),
    { [foreverProduct]: true, [timedProduct]: false, [noRole]: false },
    'a permanent role cannot be bought again usefully; a timed one can be extended (username case-insensitive)',
  );
  t.same(await restricted('?username=alex'), { [foreverProduct]: false, [timedProduct]: false, [noRole]: false });
  t.same(await restricted('?username=nobody'), { [foreverProduct]: false, [timedProduct]: false, [noRole]: false }, 'an unknown player still browses');
  t.same(await restricted(''), { [foreverProduct]: false, [timedProduct]: false, [noRole]: false });
});

/**
 * How many SQL statements `fn` runs: the fewest the database ran over three calls, since the
 * server's own rounds (the settings refresh, the sweeps) may add theirs to one call's count.
 */
async function countQueries(app: FastifyInstance, fn: () => Promise<unknown>): Promise<number> {
  let fewest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const before = app.db.statements;
    await fn();
    fewest = Math.min(fewest, app.db.statements - before);
  }
  return fewest;
}

/** Statements of one listing over a nested catalogue of `products` products, some discounted, stocked or with variables. */
async function listingQueryCount(app: FastifyInstance, products: number): Promise<number> {
  const categories = Math.max(1, Math.min(20, Math.floor(products / 10)));
  for (let c = 0; c < categories; c++) {
    const parentID = c % 2 ? await makeCategory(app, { name: `Group ${c}` }) : 0;
    const categoryID = await makeCategory(app, { name: `Category ${c}`, parentID });
    await Promise.all(
      Array.from({ length: Math.ceil(products / categories) }, (_, p) =>
        makeProduct(app, {
          categoryID,
          name: `Product ${c}-${p}`,
          price: `${1 + (p % 40)}.99`,
          ...(p % 3 === 0 ? { discountedPrice: '0.99' } : {}),
          ...(p % 4 === 0 ? { stock: 1000 } : {}),
          ...(p % 5 === 0 ? { variables: [{ name: 'server', required: true, values: ['eu', 'na'] }] } : {}),
          ...(p % 10 === 9 ? { isActive: false } : {}),
        }),
      ),
    );
  }
  return countQueries(app, () => call(app, '/api/store/listing'));
}

t.test('the listing runs a fixed number of statements however big the catalogue', async (t) => {
  const small = await storeApp(t);
  const large = await storeApp(t);
  const few = await listingQueryCount(small, 10);
  const many = await listingQueryCount(large, 300);
  t.ok(few > 0 && few <= 3, `${few} statements for 10 products`);
  t.equal(many, few, `${many} statements for 300 products in 20 categories`);
  type Node = { products: unknown[]; subcategories: Node[] };
  const countProducts = (nodes: Node[]): number => nodes.reduce((n, c) => n + c.products.length + countProducts(c.subcategories), 0);
  const [active] = await large.db.query(sql`select ${fields({ n: count() })} from ${StoreProduct} where ${StoreProduct.c.isActive} = 1`);
  t.equal(
    countProducts((await call(large, '/api/store/listing')).json().categories),
    Number(active!.n),
    'every active product of the seeded catalogue is listed',
  );
  t.ok(Number(active!.n) > 250);

  await makeUser(small, 'steve');
  await makeUser(large, 'steve');
  const withUser = (app: typeof small) => countQueries(app, () => call(app, '/api/store/listing?username=steve'));
  t.equal(await withUser(large), await withUser(small), 'with a username too');
});
