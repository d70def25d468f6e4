import t from 'tap';
import { ENCODINGS, apiKey, build, call, overBoth, sharedDatabaseUrl } from '../../../test/helper.ts';
import { SUPPORT_FEATURES, desk, openTicket } from './fixtures.ts';

t.test('support categories: the list, and one category as an array of one', async (t) => {
  const d = await desk(t);
  const bugs = (await call(d.app, '/api/admin/support/categories', { body: { name: 'Bugs & <Glitches>' } })).json();
  const list = await call(d.app, '/api/support/categories');
  t.equal(list.statusCode, 200);
  t.same(list.json(), [
    { id: d.categoryId, name: 'Payments' },
    { id: bugs.id, name: 'Bugs & <Glitches>' },
  ]);
  t.same((await call(d.app, '/api/support/categories?limit=1&offset=1')).json(), [bugs]);

  const one = await call(d.app, `/api/support/categories/${bugs.id}`);
  t.equal(one.statusCode, 200);
  t.same(one.json(), [{ id: bugs.id, name: 'Bugs & <Glitches>' }]);
  for (const id of ['999', '0']) {
    const res = await call(d.app, `/api/support/categories/${id}`);
    t.equal(res.statusCode, 404);
    t.match(res.json(), { status: false, error: 'CATEGORY_NOT_FOUND', message: new RegExp(id) });
  }
  t.match((await call(d.app, '/api/support/categories/bugs')).json(), { error: 'VALIDATION_ERROR' });
});

t.test('quick answers are served at /api/store/answers and /api/support/answers', async (t) => {
  const d = await desk(t);
  const html = '<p>Try <a href="https://example.com/reset?a=1&b=2">resetting</a> 🔑</p>\n';
  const created = await call(d.app, '/api/admin/support/answers', { body: { title: 'Password', content: html } });
  t.equal(created.statusCode, 201);
  const answer = created.json();
  t.same(answer, { id: answer.id, title: 'Password', content: html });
  const second = (await call(d.app, '/api/admin/support/answers', { as: 'json', body: { title: 'Refunds', content: 'No.' } })).json();
  for (const base of ['/api/store/answers', '/api/support/answers']) {
    const list = await call(d.app, base);
    t.equal(list.statusCode, 200, base);
    t.same(list.json(), [answer, second], base);
    t.same((await call(d.app, `${base}?offset=1`)).json(), [second]);
    const one = await call(d.app, `${base}/${answer.id}`);
    t.equal(one.statusCode, 200);
    t.same(one.json(), answer, 'one quick answer is an object');
    const missing = await call(d.app, `${base}/999`);
    t.equal(missing.statusCode, 404);
    t.match(missing.json(), { status: false, error: 'ANSWER_NOT_FOUND' });
  }
});

t.test('admin routes manage categories and quick answers', async (t) => {
  const d = await desk(t);
  const cases = [
    {
      path: '/api/admin/support/categories',
      create: { name: 'Ranks' },
      change: { name: 'Ranks & roles' },
      public: '/api/support/categories',
      notFound: 'CATEGORY_NOT_FOUND',
    },
    {
      path: '/api/admin/support/answers',
      create: { title: 'Hi', content: '<b>Hello</b>' },
      change: { content: 'Bye' },
      public: '/api/support/answers',
      notFound: 'ANSWER_NOT_FOUND',
    },
  ];
  for (const c of cases) {
    for (const as of ENCODINGS) {
      const res = await call(d.app, c.path, { as, body: c.create });
      t.equal(res.statusCode, 201, `${c.path} ${as}`);
      t.same(res.json(), { id: res.json().id, ...c.create });
    }
    const list = (await call(d.app, c.path)).json();
    const mine = list.filter((r: any) => Object.entries(c.create).every(([k, v]) => r[k] === v));
    t.equal(mine.length, ENCODINGS.length);
    const id = mine[0].id;
    t.same((await call(d.app, `${c.path}/${id}`)).json(), { id, ...c.create });

    const patched = await call(d.app, `${c.path}/${id}`, { method: 'PATCH', body: c.change });
    t.equal(patched.statusCode, 200);
    t.same(patched.json(), { id, ...c.create, ...c.change });
    t.same((await call(d.app, `${c.path}/${id}`)).json(), { id, ...c.create, ...c.change }, 'the change is stored');
    const empty = await call(d.app, `${c.path}/${id}`, { method: 'PATCH', as: 'json', body: {} });
    t.same(empty.json(), { id, ...c.create, ...c.change }, 'an empty change changes nothing');

    const deleted = await call(d.app, `${c.path}/${id}`, { method: 'DELETE' });
    t.equal(deleted.statusCode, 200);
    t.same(deleted.json(), { status: true });
    t.equal((await call(d.app, `${c.public}/${id}`)).statusCode, 404);
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await call(d.app, `${c.path}/${id}`, { method, body: method === 'PATCH' ? c.change : undefined });
      t.equal(res.statusCode, 404, `${method} after delete`);
      t.match(res.json(), { error: c.notFound });
    }
  }
});

t.test('admin input is validated and changes nothing when refused', async (t) => {
  const d = await desk(t);
  const refused: [string, string, Record<string, unknown>, RegExp][] = [
    ['POST', '/api/admin/support/categories', {}, /name/],
    ['POST', '/api/admin/support/categories', { name: '' }, /name/],
    ['POST', '/api/admin/support/categories', { name: 'x'.repeat(101) }, /name/],
    ['PATCH', `/api/admin/support/categories/${d.categoryId}`, { name: '' }, /name/],
    ['POST', '/api/admin/support/answers', { title: 'no content' }, /content/],
    ['POST', '/api/admin/support/answers', { content: 'no title' }, /title/],
    ['POST', '/api/admin/support/answers', { title: 'x'.repeat(256), content: 'c' }, /title/],
  ];
  for (const [method, path, body, field] of refused) {
    const res = await call(d.app, path, { method: method as 'POST', body });
    t.equal(res.statusCode, 400, `${method} ${path} ${JSON.stringify(body).slice(0, 40)}`);
    t.match(res.json(), { status: false, error: 'VALIDATION_ERROR', message: field });
  }
  t.same((await call(d.app, '/api/support/categories')).json(), [{ id: d.categoryId, name: 'Payments' }]);
  t.same((await call(d.app, '/api/support/answers')).json(), []);
});

t.test('a category that holds tickets cannot be deleted', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const res = await call(d.app, `/api/admin/support/categories/${d.categoryId}`, { method: 'DELETE' });
  t.equal(res.statusCode, 409);
  t.match(res.json(), { status: false, error: 'CONFLICT', message: /1 ticket/ });
  t.equal((await call(d.app, `/api/support/tickets/${id}`)).json().category.name, 'Payments');
  const renamed = await call(d.app, `/api/admin/support/categories/${d.categoryId}`, { method: 'PATCH', body: { name: 'Billing' } });
  t.equal(renamed.statusCode, 200);
  t.equal((await call(d.app, '/api/support/tickets')).json()[0].categoryName, 'Billing', 'tickets show the new name');
});

t.test('a category deleted on one instance while tickets are opened in it on another: no ticket is left without its category', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const d = await desk(t, url);
  const b = await build(t, { features: SUPPORT_FEATURES, databaseUrl: url });
  let deleted = 0;
  for (let round = 0; round < 5; round++) {
    const category = (await call(d.app, '/api/admin/support/categories', { body: { name: `Round ${round}` } })).json().id;
    // The delete comes among the opens, on either instance, at a different place each round.
    const answers = await overBoth([d.app, b], 11, (app, i) =>
      i === 2 * round + 1
        ? call(app, `/api/admin/support/categories/${category}`, { method: 'DELETE' })
        : call(app, '/api/support/tickets', { as: 'json', body: { accountID: String(d.player.id), categoryID: category, title: 'Help', message: 'Hello' } }),
    );
    const del = answers[2 * round + 1]!;
    const opened = answers.filter((r, i) => i !== 2 * round + 1 && r.statusCode === 200).length;
    const tickets = (await call(b, `/api/support/tickets?categoryID=${category}`)).json();
    t.equal(tickets.length, opened, `round ${round}: every ticket answered 200 is stored`);
    if (del.statusCode === 200) {
      deleted++;
      t.equal(opened, 0, `round ${round}: deleted only while empty`);
      t.ok(
        answers.every((r) => r === del || r.json().error === 'CATEGORY_NOT_FOUND'),
        'the opens after it are refused',
      );
    } else {
      t.match(del.json(), { error: 'CONFLICT' }, `round ${round}: refused`);
      const held = Number(/holds (\d+) ticket/.exec(del.json().message)?.[1]);
      t.ok(held >= 1 && held <= opened, `for the ${held} ticket(s) opened before it`);
      t.ok(
        tickets.every((x: { categoryName: string }) => x.categoryName === `Round ${round}`),
        'and they show it',
      );
    }
  }
  t.comment(`${deleted} of 5 deletes came before every open`);
});

t.test('an upgrade counts the tickets opened before it: their category still cannot be deleted', async (t) => {
  const url = await sharedDatabaseUrl(t);
  const before = await desk(t, url);
  await openTicket(before);
  await openTicket(before);
  // The database as it was before the count: its column and its migration's record gone.
  await before.app.db.unchecked.run('alter table support_categories drop column tickets');
  await before.app.db.unchecked.run("delete from core_migrations where name like '%_support_category_tickets'");
  await before.app.close();

  const after = await build(t, { features: SUPPORT_FEATURES, databaseUrl: url });
  const res = await call(after, `/api/admin/support/categories/${before.categoryId}`, { method: 'DELETE' });
  t.equal(res.statusCode, 409);
  t.match(res.json(), { error: 'CONFLICT', message: /2 ticket/ });
});

t.test('admin routes need the admin scope; the public ones any key', async (t) => {
  const d = await desk(t);
  const key = await apiKey(d.app);
  for (const [method, path] of [
    ['GET', '/api/admin/support/categories'],
    ['POST', '/api/admin/support/answers'],
    ['DELETE', `/api/admin/support/categories/${d.categoryId}`],
  ] as const) {
    const res = await call(d.app, path, { method, key, body: method === 'POST' ? { title: 't', content: 'c' } : undefined });
    t.equal(res.statusCode, 403, `${method} ${path}`);
    t.match(res.json(), { status: false, error: 'FORBIDDEN' });
  }
  t.equal((await call(d.app, '/api/support/categories', { key })).statusCode, 200);
  t.equal((await call(d.app, '/api/support/tickets', { key })).statusCode, 200);
  t.equal((await call(d.app, '/api/support/answers', { key })).statusCode, 200);
  const none = await call(d.app, '/api/support/tickets', { key: null });
  t.equal(none.statusCode, 401);
  t.match(none.json(), { error: 'INVALID_API_KEY' });
  t.same((await call(d.app, '/api/support/answers')).json(), [], 'the refused create stored nothing');
  t.equal((await call(d.app, '/api/support/categories')).json().length, 1, 'the refused delete deleted nothing');
});
