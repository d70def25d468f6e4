/**
 * The Kotlin wrapper's requests as its `Service` sends them (`X-Api-Key`, a form content type,
 * `key=value` bodies joined by `&`, values not percent-encoded) and its answers decoded as its
 * kotlinx.serialization models decode them (`ignoreUnknownKeys`, `coerceInputValues`): a non-2xx
 * throws, and a model field that is missing, or a JSON number where the model wants a String,
 * makes the decode fail. Only its paths and fields are checked here; the handlers' behaviour is
 * tested with each feature.
 */
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { created, newUser } from './fixtures.ts';
import { ADMIN_KEY, build } from './helper.ts';

/**
 * A model: each field, whether it may be null (`String?`), and lists of nested models. Field names
 * in this project's terms (minecraft → game, discord → chat). Without `explicitNulls = false` a
 * nullable field is still required.
 */
type Model = Record<string, 'string' | 'string?' | { list: Model }>;

const USER: Model = {
  id: 'string',
  uuid: 'string?',
  username: 'string',
  realname: 'string',
  email: 'string',
  lastlogin: 'string',
  x: 'string',
  y: 'string',
  z: 'string',
  world: 'string',
  isLogged: 'string',
  credit: 'string',
  isVerified: 'string',
  authStatus: 'string',
  creationIP: 'string',
  creationDate: 'string',
};
const PRODUCT: Model = {
  id: 'string',
  categoryID: 'string',
  giveRoleID: 'string',
  name: 'string',
  imageID: 'string',
  imageType: 'string',
  details: 'string',
  price: 'string',
  discountedPrice: 'string',
  discountExpiryDate: 'string',
  duration: 'string',
  stock: 'string',
  priority: 'string',
  isFeaturedProduct: 'string',
  gameStatus: 'string',
  gameTitle: 'string?',
  gameDescription: 'string?',
  gameItem: 'string',
  gameItemModelID: 'string?',
  requireOnlyOneProduct: 'string',
  isActive: 'string',
  creationDate: 'string',
};
const CATEGORY: Model = {
  id: 'string',
  parentID: 'string',
  name: 'string',
  slug: 'string',
  imageID: 'string',
  imageType: 'string',
  priority: 'string',
  gameStatus: 'string',
  gameTitle: 'string?',
  gameDescription: 'string?',
  gameItem: 'string',
  gameItemModelID: 'string?',
  isActive: 'string',
  isCumulative: 'string',
};
// Subcategories are categories again; the listing's depth is covered by the store's own tests.
const CATEGORY_TREE: Model = { ...CATEGORY, subcategories: { list: CATEGORY }, products: { list: PRODUCT } };
const ROLE: Model = { id: 'string', name: 'string', slug: 'string', priority: 'string', chatRoleID: 'string?', expiryDate: 'string' };

/** Which fields of `value` the model could not decode (empty: it decodes). */
function undecodable(value: unknown, model: Model, path = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path || 'value'}: not an object`];
  const row = value as Record<string, unknown>;
  const bad: string[] = [];
  for (const [field, type] of Object.entries(model)) {
    const v = row[field];
    if (typeof type === 'object') {
      if (v === undefined) continue; // the lists have defaults
      if (!Array.isArray(v)) bad.push(`${path}${field}: not a list`);
      else for (const [i, item] of v.entries()) bad.push(...undecodable(item, type.list, `${path}${field}[${i}].`));
    } else if (v === undefined) bad.push(`${path}${field}: missing`);
    else if (!(typeof v === 'string' || (v === null && type === 'string?'))) bad.push(`${path}${field}: ${JSON.stringify(v)} is not a string`);
  }
  return bad;
}

async function wrapper(app: FastifyInstance, method: 'GET' | 'POST', endpoint: string, body?: Record<string, string>) {
  const res = await app.inject({
    method,
    url: `/api/${endpoint}`,
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded' },
    ...(body
      ? {
          payload: Object.entries(body)
            .map(([k, v]) => `${k}=${v}`)
            .join('&'),
        }
      : {}),
  });
  if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`HTTP error ${res.statusCode}: ${endpoint} ${res.body}`);
  return res.json();
}

t.test('UserService: the profile, roles, tickets and orders by ID and by username', async (t) => {
  const app = await build(t);
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  // A name made of digits that is no account's ID is still found by name.
  const digits = await newUser(app, '31337');
  const role = (await created(app, '/api/admin/roles', { name: 'VIP', slug: 'vip' }, 'json')).id;
  t.equal(
    (await app.inject({ method: 'POST', url: `/api/users/${steve.id}/roles`, headers: { 'x-api-key': ADMIN_KEY }, payload: { roleID: role } })).statusCode,
    200,
  );

  for (const ref of [String(steve.id), 'Steve', 'steve']) {
    const user = await wrapper(app, 'GET', `users/${ref}`);
    t.strictSame(undecodable(user, USER), [], `users/${ref} decodes as User`);
    t.equal(user.id, String(steve.id));
    t.equal(user.credit, '10.00');
    const roles = await wrapper(app, 'GET', `users/${ref}/roles`);
    t.strictSame(
      roles.map((r: unknown) => undecodable(r, ROLE)),
      [[]],
      `users/${ref}/roles`,
    );
    t.equal(roles[0].id, String(role));
    t.strictSame(await wrapper(app, 'GET', `users/${ref}/tickets`), [], `users/${ref}/tickets`);
    t.strictSame(await wrapper(app, 'GET', `users/${ref}/orders`), [], `users/${ref}/orders`);
  }
  t.equal((await wrapper(app, 'GET', 'users/31337')).id, String(digits.id), 'digits that are no ID: the username');
  t.equal((await wrapper(app, 'GET', `users/${steve.id}`)).username, 'Steve', 'digits that are an ID: the ID');
  const nobody = await app.inject({ method: 'GET', url: '/api/users/Nobody', headers: { 'x-api-key': ADMIN_KEY } });
  t.equal(nobody.statusCode, 404);
  t.equal(nobody.json().error, 'USER_NOT_FOUND');
  const roles = await app.inject({ method: 'GET', url: '/api/users/Nobody/orders', headers: { 'x-api-key': ADMIN_KEY } });
  t.equal(roles.json().error, 'USER_NOT_FOUND');
});

t.test("the chat integration's user by chat ID decodes as User", async (t) => {
  const app = await build(t);
  const steve = await newUser(app, 'Steve', { cents: 250 });
  t.equal(
    (
      await app.inject({
        method: 'PUT',
        url: `/api/admin/users/${steve.id}/linked-accounts/chat`,
        headers: { 'x-api-key': ADMIN_KEY },
        payload: { externalID: '223456789012345678' },
      })
    ).statusCode,
    200,
  );
  const user = await wrapper(app, 'GET', 'integrations/chat/users/223456789012345678');
  t.strictSame(undecodable(user, USER), [], "every field the wrapper's User requires, each a string");
  t.match(user, { id: String(steve.id), username: 'Steve', credit: '2.50', chatUserID: '223456789012345678' });
  const profile = await wrapper(app, 'GET', `users/${steve.id}`);
  for (const field of ['uuid', 'lastlogin', 'x', 'y', 'z', 'world', 'isLogged']) t.equal(user[field], profile[field], `${field} as /api/users has it`);
});

t.test('CreditService: the older paths show, add, remove and send', async (t) => {
  const app = await build(t);
  const steve = await newUser(app, 'Steve', { cents: 1000 });
  await newUser(app, 'Alex');
  for (const ref of ['Steve', String(steve.id)]) {
    const shown = await wrapper(app, 'GET', `credits/${ref}`);
    t.match(shown, { status: true, credits: '10.00 USD', raw_credits: 10, currency: 'USD' }, `oldShow(${ref})`);
  }
  t.match(await wrapper(app, 'POST', 'credits/Steve/add', { amount: '2.5' }), { status: true, current_raw_credits: 12.5 }, 'oldAdd');
  t.match(await wrapper(app, 'POST', 'credits/Steve/remove', { amount: '0.5' }), { status: true, current_raw_credits: 12 }, 'oldRemove');
  t.match(
    await wrapper(app, 'POST', 'credits/Steve/send', { target_username: 'Alex', amount: '2.0' }),
    { status: true, current_raw_credits: 10, target_current_raw_credits: 2 },
    'oldSend: the path names the sender',
  );
  t.match(await wrapper(app, 'POST', 'credits/Steve/set', { amount: '5.0' }), { status: true, current_raw_credits: 5 }, 'oldSet');
  t.match(await wrapper(app, 'GET', 'credits?username=Steve'), { raw_credits: 5 }, 'the balance the current path shows');

  const refused = async (url: string, payload: string) =>
    (
      await app.inject({
        method: 'POST',
        url,
        payload,
        headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded' },
      })
    ).json();
  t.match(await refused('/api/credits/Nobody/add', 'amount=1.0'), { error: 'USER_NOT_FOUND' });
  t.match(await refused('/api/credits/Steve/remove', 'amount=99.0'), { error: 'NOT_ENOUGH_CREDITS' });
  t.match(await refused('/api/credits/Steve/send', 'target_username=Nobody&amount=1.0'), { error: 'TARGET_USER_NOT_FOUND' });
  t.match(await refused('/api/credits/Steve/add', 'amount=0'), { error: 'INVALID_AMOUNT' });
  t.match(await wrapper(app, 'GET', 'credits/Steve'), { raw_credits: 5 }, 'the refused calls changed nothing');
});

t.test('StoreService: the listing, products and categories decode as its models', async (t) => {
  const app = await build(t);
  const top = Number((await created(app, '/api/admin/store/categories', { name: 'Ranks', slug: 'ranks' }, 'json')).id);
  const sub = Number((await created(app, '/api/admin/store/categories', { name: 'Monthly', slug: 'monthly', parentID: top }, 'json')).id);
  await created(app, '/api/admin/store/products', { categoryID: sub, name: 'VIP', price: '10' }, 'json');
  await created(app, '/api/admin/store/products', { categoryID: top, name: 'Kit', price: '2', stock: 5 }, 'json');

  const listing = await wrapper(app, 'GET', 'store/listing');
  t.strictSame(
    listing.categories.flatMap((c: unknown) => undecodable(c, CATEGORY_TREE)),
    [],
    'Map<String, List<Category>> decodes',
  );
  const [ranks] = listing.categories;
  t.equal(ranks.products[0].stock, '5', "stock: a string for the wrapper, digits for the game plugin's getInt");
  t.equal(ranks.subcategories[0].products[0].stock, '-1');
  t.strictSame(undecodable(ranks.subcategories[0].products[0], PRODUCT), [], 'a nested product decodes');

  const products = await wrapper(app, 'GET', 'store/products');
  t.strictSame(
    products.flatMap((p: unknown) => undecodable(p, PRODUCT)),
    [],
    'List<StoreProduct>',
  );
  t.strictSame(undecodable(await wrapper(app, 'GET', `store/products/${products[0].id}`), PRODUCT), [], 'StoreProduct');
  const categories = await wrapper(app, 'GET', 'store/categories');
  t.strictSame(
    categories.flatMap((c: unknown) => undecodable(c, CATEGORY)),
    [],
    'List<Category>',
  );
  t.strictSame(undecodable(await wrapper(app, 'GET', `store/categories/${top}`), CATEGORY_TREE), [], 'Category with its tree');
});
