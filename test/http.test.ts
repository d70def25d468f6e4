import t from 'tap';
import { ECHO_PLUGIN } from './fixtures.ts';
import { ENCODINGS, build, call, encode } from './helper.ts';
import { unstorableError } from '../core/http/strict-types.ts';

t.test('multipart, urlencoded and JSON bodies mean the same, bracket keys included', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const body = {
    userID: '7',
    products: [{ id: '5', quantity: '2', variables: { server: 'eu' } }, { id: '6' }],
    note: 'a+b c&d=é',
  };
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body, as });
    t.equal(res.statusCode, 200, as);
    t.same(res.json().body, body, `${as} body`);
  }
  const raw = (payload: string) =>
    app.inject({
      method: 'POST',
      url: '/api/echo',
      payload,
      headers: { 'x-api-key': 'test-admin-key-0123456789abcdef', 'content-type': 'application/x-www-form-urlencoded' },
    });
  t.same((await raw('products[]=5&products[]=6')).json().body, { products: ['5', '6'] }, 'products[] form');
  t.same((await raw('products=1&products=2')).json().body, { products: ['1', '2'] }, 'repeated plain keys form an array');
  t.same((await raw('products[0][id]=5&products[0][quantity]=2&products[0][variables][server]=eu')).json().body, {
    products: [{ id: '5', quantity: '2', variables: { server: 'eu' } }],
  });
  t.same((await raw('__proto__[x]=1&a=1')).json().body, { a: '1' }, 'no prototype keys');
});

t.test('empty bodies and stray content types are tolerated; trailing slashes ignored', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const key = { 'x-api-key': 'test-admin-key-0123456789abcdef' };
  let res = await app.inject({ method: 'POST', url: '/api/echo', headers: key });
  t.equal(res.statusCode, 200, 'POST without body or content type');
  t.same(res.json().body, {});
  for (const method of ['GET', 'DELETE'] as const) {
    res = await app.inject({ method, url: '/api/echo', headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    t.equal(res.statusCode, 200, `${method} with an urlencoded content type and no body`);
  }
  res = await app.inject({ method: 'POST', url: '/api/echo', headers: { ...key, 'content-type': 'application/json' }, payload: '' });
  t.equal(res.statusCode, 200, 'empty JSON body');
  res = await app.inject({ method: 'GET', url: '/api/echo/', headers: key });
  t.equal(res.statusCode, 200, 'trailing slash');
  res = await app.inject({ method: 'GET', url: '//api//echo', headers: key });
  t.equal(res.statusCode, 200, 'duplicate slashes');
});

t.test('bad bodies get JSON errors: malformed JSON, other media types', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const key = { 'x-api-key': 'test-admin-key-0123456789abcdef' };
  let res = await app.inject({ method: 'POST', url: '/api/echo', headers: { ...key, 'content-type': 'application/json' }, payload: '{"a":' });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'VALIDATION_ERROR');
  res = await app.inject({ method: 'POST', url: '/api/echo', headers: { ...key, 'content-type': 'text/xml' }, payload: '<a/>' });
  t.equal(res.statusCode, 415);
  t.equal(res.json().error, 'UNSUPPORTED_MEDIA_TYPE');
  res = await app.inject({ method: 'POST', url: '/api/echo', headers: { ...key, 'content-type': 'multipart/form-data' }, payload: 'x' });
  t.ok(res.statusCode >= 400 && res.statusCode < 500, `multipart without boundary: ${res.statusCode}`);
  t.equal(res.json().status, false);
});

t.test('size limits: 413, never a silent truncation', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  const big = 'x'.repeat(64 * 1024 + 1);
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body: { base64: big }, as });
    t.equal(res.statusCode, 413, `oversized field, ${as}`);
    t.equal(res.json().error, 'PAYLOAD_TOO_LARGE');
    t.match(res.json().message, /base64/);
  }
  const fits = 'y'.repeat(64 * 1024);
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body: { base64: fits }, as });
    t.equal(res.statusCode, 200, `a field of exactly the limit, ${as}`);
    t.equal(res.json().body.base64.length, fits.length, 'arrives whole');
  }
  const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, '1']));
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body: many, as });
    t.equal(res.statusCode, 413, `101 fields, ${as}`);
  }
  // Every field within its limit, the whole over 1 MiB: multipart is parsed outside Fastify's bodyLimit.
  const padded = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`pad${i}`, 'p'.repeat(63 * 1024)]));
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body: padded, as });
    t.equal(res.statusCode, 413, `body over 1 MiB in fields within the field limit, ${as}`);
    t.equal(res.json().error, 'PAYLOAD_TOO_LARGE');
  }
  const huge = encode({ a: 'z'.repeat(1024 * 1024 + 10) }, 'urlencoded');
  const res = await app.inject({
    method: 'POST',
    url: '/api/echo',
    payload: huge.payload,
    headers: { ...huge.headers, 'x-api-key': 'test-admin-key-0123456789abcdef' },
  });
  t.equal(res.statusCode, 413, 'whole body over 1 MiB');
  t.equal(res.json().error, 'PAYLOAD_TOO_LARGE');
});

t.test("the router's own refusals come in the error shape: bad percent-encoding, over-long path parameters", async (t) => {
  const app = await build(t, { features: ['users'] });
  for (const url of ['/api/users%zz', '/api/users/%ff/roles', `/api/users/${'9'.repeat(200)}/roles`]) {
    const res = await call(app, url);
    t.equal(res.statusCode, 400, url.slice(0, 30));
    t.same(Object.keys(res.json()).sort(), ['error', 'message', 'status']);
    t.equal(res.json().error, 'VALIDATION_ERROR');
  }
});

t.test('values the database cannot carry are refused: NUL characters, non-finite numbers', async (t) => {
  const app = await build(t, { features: ['users'], config: { plugins: ECHO_PLUGIN } });
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/echo', { body: { name: 'a\u0000b' }, as });
    t.equal(res.statusCode, 400, `NUL in a body field, ${as}`);
    t.same(res.json(), { status: false, error: 'VALIDATION_ERROR', message: 'name must not contain a NUL character' });
  }
  let res = await call(app, '/api/users?username=a%00b');
  t.equal(res.statusCode, 400, 'NUL in a query parameter');
  t.equal(res.json().message, 'username must not contain a NUL character');
  res = await app.inject({
    method: 'POST',
    url: '/api/echo',
    payload: '{"n":[1e999]}',
    headers: { 'x-api-key': 'test-admin-key-0123456789abcdef', 'content-type': 'application/json' },
  });
  t.strictSame(res.json().body, { n: ['1e999'] }, 'a JSON number in exponent notation stays the text it was written as, never Infinity');
  // AJV coerces a long enough string of digits to Infinity and then skips its minimum/maximum checks.
  res = await call(app, '/api/users/1/roles', { body: { roleID: '9'.repeat(400) }, as: 'urlencoded' });
  t.equal(res.statusCode, 400, 'a form number coerced to Infinity');
  t.equal(res.json().message, 'roleID must be a finite number');
});

t.test("a raw body's bytes are not walked for values the database cannot carry", async (t) => {
  const body = Buffer.from('{"id":"evt_1","data":"\u0000"}');
  let walked = false;
  Object.defineProperty(body, 'probe', {
    enumerable: true,
    get: () => {
      walked = true;
      return 0;
    },
  });
  t.equal(unstorableError({ params: {}, query: {}, body } as never), undefined, 'bytes, even a zero, are not refused');
  t.notOk(walked, 'nor visited one by one');
});
