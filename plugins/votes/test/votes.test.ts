import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { ENCODINGS, apiKey, build, call } from '../../../test/helper.ts';
import { created } from '../../../test/fixtures.ts';

const FEATURES = ['votes'];

function addLink(app: FastifyInstance, name: string, link: string): Promise<Record<string, string>> {
  return created(app, '/api/admin/vote-links', { name, link });
}

t.test('vote links: {username} is replaced by the URL-encoded name, or by nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  await addLink(app, 'Site A', 'https://a.example/vote/42?user={username}');
  await addLink(app, 'Site B', 'https://b.example/{username}/vote?again={username}');
  await addLink(app, 'Site C', 'https://c.example/vote');
  const key = await apiKey(app);

  const named = await call(app, '/api/vote-links?username=Steve', { key });
  t.equal(named.statusCode, 200);
  t.same(
    named.json().map((l: { link: string }) => l.link),
    ['https://a.example/vote/42?user=Steve', 'https://b.example/Steve/vote?again=Steve', 'https://c.example/vote'],
  );
  t.same(named.json()[0], { id: named.json()[0].id, name: 'Site A', link: 'https://a.example/vote/42?user=Steve' });
  t.match(named.json()[0].id, /^\d+$/);

  const odd = await call(app, `/api/vote-links?username=${encodeURIComponent('a&b c/é')}`, { key });
  t.equal(odd.json()[0].link, 'https://a.example/vote/42?user=a%26b%20c%2F%C3%A9', 'a name cannot break out of its place');

  const anonymous = await call(app, '/api/vote-links/', { key });
  t.same(
    anonymous.json().map((l: { link: string }) => l.link),
    ['https://a.example/vote/42?user=', 'https://b.example//vote?again=', 'https://c.example/vote'],
  );

  t.same(
    (await call(app, '/api/admin/vote-links')).json().map((l: { link: string }) => l.link),
    ['https://a.example/vote/42?user={username}', 'https://b.example/{username}/vote?again={username}', 'https://c.example/vote'],
    'the admin list keeps the placeholders',
  );

  const long = await call(app, `/api/vote-links?username=${'x'.repeat(65)}`, { key });
  t.equal(long.statusCode, 400);
  t.equal(long.json().error, 'VALIDATION_ERROR');
});

t.test('vote links: none configured is an empty list', async (t) => {
  const app = await build(t, { features: FEATURES });
  const res = await call(app, '/api/vote-links?username=steve');
  t.equal(res.statusCode, 200);
  t.same(res.json(), []);
});

t.test('admin vote links: create in every encoding, read, change, delete', async (t) => {
  const app = await build(t, { features: FEATURES });
  const ids: string[] = [];
  for (const as of ENCODINGS) {
    const res = await call(app, '/api/admin/vote-links', { body: { name: `Site ${as}`, link: 'https://x.example/{username}' }, as });
    t.equal(res.statusCode, 201, as);
    t.same(res.json(), { id: res.json().id, name: `Site ${as}`, link: 'https://x.example/{username}' });
    ids.push(res.json().id);
  }
  const [id] = ids;
  t.same((await call(app, `/api/admin/vote-links/${id}`)).json(), { id, name: 'Site multipart', link: 'https://x.example/{username}' });

  const patched = await call(app, `/api/admin/vote-links/${id}`, { method: 'PATCH', body: { link: 'http://y.example/v?u={username}' } });
  t.equal(patched.statusCode, 200);
  t.same(patched.json(), { id, name: 'Site multipart', link: 'http://y.example/v?u={username}' });
  t.equal((await call(app, '/api/vote-links?username=al')).json()[0].link, 'http://y.example/v?u=al');

  const deleted = await call(app, `/api/admin/vote-links/${id}`, { method: 'DELETE' });
  t.equal(deleted.statusCode, 200);
  t.same(deleted.json(), { status: true });
  t.same(
    (await call(app, '/api/admin/vote-links')).json().map((l: { id: string }) => l.id),
    ids.slice(1),
  );

  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'n' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, `/api/admin/vote-links/${id}`, { method, body });
    t.equal(res.statusCode, 404, method);
    t.equal(res.json().error, 'VOTE_LINK_NOT_FOUND', method);
  }
  t.equal((await call(app, '/api/admin/vote-links/abc')).json().error, 'VALIDATION_ERROR');
});

t.test('admin vote links: bad input is refused and changes nothing', async (t) => {
  const app = await build(t, { features: FEATURES });
  const kept = await addLink(app, 'Kept', 'https://kept.example/{username}');
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ link: 'https://x.example' }, /name/],
    [{ name: 'x' }, /link/],
    [{ name: '', link: 'https://x.example' }, /name/],
    [{ name: 'x', link: 'javascript:alert(1)' }, /link/],
    [{ name: 'x', link: 'not a url' }, /link/],
    [{ name: 'x', link: `https://x.example/${'a'.repeat(2048)}` }, /link/],
    [{ name: 'x\u0000', link: 'https://x.example' }, /name/],
  ];
  for (const [body, field] of bad) {
    const res = await call(app, '/api/admin/vote-links', { body, as: 'json' });
    t.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60));
    t.equal(res.json().error, 'VALIDATION_ERROR');
    t.match(res.json().message, field);
  }
  const patch = await call(app, `/api/admin/vote-links/${kept.id}`, { method: 'PATCH', body: { name: 'Changed', link: 'ftp://x.example' } });
  t.equal(patch.json().error, 'VALIDATION_ERROR');
  t.same((await call(app, '/api/admin/vote-links')).json(), [kept], 'nothing changed');

  const forbidden = await call(app, '/api/admin/vote-links', { body: { name: 'x', link: 'https://x.example' }, key: await apiKey(app) });
  t.equal(forbidden.statusCode, 403);
  t.equal(forbidden.json().error, 'FORBIDDEN');
});
