import t from 'tap';
import { ADMIN_KEY, ENCODINGS, call } from '../../../test/helper.ts';
import { displayTimestamp, now } from '../../../core/format.ts';
import { rowCount } from '../../../test/fixtures.ts';
import { supportRef } from '../contract.ts';
import { SupportMessage, SupportTicket } from '../entities.ts';
import { OLD, desk, openTicket, ticket } from './fixtures.ts';

t.test('a ticket is created with its first message from every encoding, at both paths', async (t) => {
  const d = await desk(t);
  const paths = ['/api/support/tickets', '/api/support/tickets/0', '/api/support/tickets/new', '/api/support/tickets/'];
  for (const as of ENCODINGS) {
    for (const path of paths) {
      const before = now();
      const res = await call(d.app, path, {
        as,
        body: { accountID: String(d.player.id), categoryID: d.categoryId, title: `Help ${as} ${path}`, message: `Body ${as} ${path}` },
      });
      t.equal(res.statusCode, 200, `${as} ${path}`);
      const body = res.json();
      t.same(Object.keys(body).sort(), ['data', 'success'], 'only success and data: no status or error key');
      t.equal(body.success, true);
      t.match(body.data.id, /^[0-9]+$/);
      const got = await ticket(d, body.data.id);
      t.match(got, {
        id: body.data.id,
        accountID: String(d.player.id),
        categoryID: d.categoryId,
        title: `Help ${as} ${path}`,
        statusID: '1',
        readStatus: '1',
        category: { id: d.categoryId, name: 'Payments' },
      });
      t.equal(got.updateDate, got.creationDate);
      t.ok(got.creationDate >= before && got.creationDate <= now(), 'creationDate is the time of creation');
      t.same(
        got.messages.map((m: any) => [m.accountID, m.message, m.writeLocation]),
        [[String(d.player.id), `Body ${as} ${path}`, '1']],
      );
    }
  }
  t.equal(await rowCount(d.app, 'support_tickets'), ENCODINGS.length * paths.length);
});

t.test('creation takes a statusID from 1 to 4, and refuses anything else', async (t) => {
  const d = await desk(t);
  for (const statusID of ['1', '2', '3', '4']) {
    const id = await openTicket(d, { statusID });
    t.equal((await ticket(d, id)).statusID, statusID);
  }
  const jsonNumber = await openTicket(d, { statusID: 3 }, 'json');
  t.equal((await ticket(d, jsonNumber)).statusID, '3', 'a JSON number is accepted');
  for (const statusID of ['0', '5', 'open', '1.5', '']) {
    const res = await call(d.app, '/api/support/tickets', {
      body: { accountID: String(d.player.id), categoryID: d.categoryId, title: 'x', message: 'y', statusID },
    });
    t.equal(res.statusCode, 400, `statusID=${statusID}`);
    t.match(res.json(), { status: false, error: 'VALIDATION_ERROR', message: /statusID/ });
  }
  t.equal(await rowCount(d.app, 'support_tickets'), 5, 'the refused ones were not created');
});

t.test('creation errors name the problem and create nothing', async (t) => {
  const d = await desk(t);
  const good = { accountID: String(d.player.id), categoryID: d.categoryId, title: 'Title', message: 'Message' };
  const cases: [string, Record<string, unknown>, number, string, RegExp][] = [
    ['no title', { ...good, title: undefined }, 400, 'VALIDATION_ERROR', /title/],
    ['empty title', { ...good, title: '' }, 400, 'VALIDATION_ERROR', /title/],
    ['title too long', { ...good, title: 'x'.repeat(256) }, 400, 'VALIDATION_ERROR', /title/],
    ['no message', { ...good, message: undefined }, 400, 'VALIDATION_ERROR', /message/],
    ['no categoryID', { ...good, categoryID: undefined }, 400, 'VALIDATION_ERROR', /categoryID/],
    ['categoryID not a number', { ...good, categoryID: 'payments' }, 400, 'VALIDATION_ERROR', /categoryID/],
    ['accountID not a number', { ...good, accountID: 'steve' }, 400, 'VALIDATION_ERROR', /accountID/],
    ['no author at all', { ...good, accountID: undefined }, 400, 'VALIDATION_ERROR', /accountID/],
    ['unknown account', { ...good, accountID: '999' }, 404, 'USER_NOT_FOUND', /999/],
    ['account id beyond 2^53', { ...good, accountID: '999999999999999999' }, 404, 'USER_NOT_FOUND', /No user/],
    ['unknown chat user', { ...good, accountID: undefined, chatUserID: '424242' }, 404, 'USER_NOT_FOUND', /424242/],
    ['unknown category', { ...good, categoryID: '999' }, 404, 'CATEGORY_NOT_FOUND', /999/],
  ];
  for (const [name, body, status, error, message] of cases) {
    const res = await call(d.app, '/api/support/tickets', { body: Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) });
    t.equal(res.statusCode, status, name);
    t.match(res.json(), { status: false, error, message }, name);
  }
  t.equal(await rowCount(d.app, 'support_tickets'), 0);
  t.equal(await rowCount(d.app, 'support_messages'), 0);
});

t.test('the author may be given as userID (the chat bot) or as a linked chatUserID', async (t) => {
  const d = await desk(t);
  const byAlias = await openTicket(d, { accountID: undefined, userID: String(d.player.id) });
  t.equal((await ticket(d, byAlias)).accountID, String(d.player.id));
  const byChat = await openTicket(d, { accountID: '', chatUserID: d.staffChatId });
  t.equal((await ticket(d, byChat)).accountID, String(d.staff.id), 'an empty accountID counts as not given');
  const jsonNumber = await openTicket(d, { accountID: d.staff.id, categoryID: Number(d.categoryId) }, 'json');
  t.equal((await ticket(d, jsonNumber)).accountID, String(d.staff.id), 'JSON numbers are accepted for ids');
  const both = await openTicket(d, { accountID: String(d.player.id), chatUserID: d.staffChatId });
  t.equal((await ticket(d, both)).accountID, String(d.player.id), 'accountID wins over chatUserID');
});

t.test('the list holds every ticket, newest first, with category name and messages', async (t) => {
  const d = await desk(t);
  const other = (await call(d.app, '/api/admin/support/categories', { body: { name: 'Bugs' } })).json().id;
  const ids: string[] = [];
  for (let i = 0; i < 25; i++) {
    ids.push(await openTicket(d, { title: `T${i}`, message: `M${i}`, categoryID: i % 2 ? other : d.categoryId }));
  }
  await call(d.app, `/api/support/tickets/${ids[3]}/messages`, { body: { accountID: String(d.staff.id), message: 'staff', isAdmin: 'true' } });

  const res = await call(d.app, '/api/support/tickets');
  t.equal(res.statusCode, 200);
  const list = res.json();
  t.same(
    list.map((x: any) => x.id),
    [...ids].reverse(),
    'all 25, without a default page size, newest first',
  );
  const third = list.find((x: any) => x.id === ids[3]);
  t.same(Object.keys(third).sort(), [
    'accountID',
    'categoryID',
    'categoryName',
    'creationDate',
    'id',
    'messages',
    'readStatus',
    'statusID',
    'title',
    'updateDate',
  ]);
  t.equal(third.categoryName, 'Bugs');
  t.same(
    third.messages.map((m: any) => m.message),
    ['M3', 'staff'],
    'messages oldest first',
  );
  t.same(Object.keys(third.messages[0]).sort(), ['accountID', 'creationDate', 'id', 'message', 'writeLocation']);
  t.equal(list.find((x: any) => x.id === ids[4]).categoryName, 'Payments');
  t.ok(list.every((x: any) => x.messages.length >= 1 && x.messages.every((m: any) => typeof m.id === 'string')));
});

t.test('the list filters by statusID, accountID and categoryID, and pages', async (t) => {
  const d = await desk(t);
  const other = (await call(d.app, '/api/admin/support/categories', { body: { name: 'Bugs' } })).json().id;
  const a = await openTicket(d);
  const b = await openTicket(d, { accountID: String(d.staff.id), categoryID: other });
  const c = await openTicket(d, { statusID: '4' });
  const e = await openTicket(d, { categoryID: other });
  const ids = async (query: string) => {
    const res = await call(d.app, `/api/support/tickets?${query}`);
    t.equal(res.statusCode, 200, query);
    return res.json().map((x: any) => x.id);
  };
  t.same(await ids('statusID=4'), [c]);
  t.same(await ids('statusID=1'), [e, b, a]);
  t.same(await ids(`accountID=${d.staff.id}`), [b]);
  t.same(await ids(`categoryID=${other}`), [e, b]);
  t.same(await ids(`categoryID=${other}&accountID=${d.player.id}&statusID=1`), [e]);
  t.same(await ids('accountID=999'), []);
  t.same(await ids('limit=2'), [e, c]);
  t.same(await ids('limit=2&offset=2'), [b, a]);
  t.same(await ids('offset=3'), [a], 'an offset alone skips without limiting');
  t.same(await ids('offset=10'), []);
  t.same(await ids(`limit=1&categoryID=${other}&offset=1`), [b]);
  for (const bad of ['statusID=5', 'statusID=x', 'accountID=-1', 'categoryID=1.5', 'limit=0', 'limit=x', 'offset=-1', 'limit=99999999999']) {
    const res = await call(d.app, `/api/support/tickets?${bad}`);
    t.equal(res.statusCode, 400, bad);
    t.match(res.json(), { status: false, error: 'VALIDATION_ERROR', message: new RegExp(bad.split('=')[0]!) }, bad);
  }
});

t.test('each listed ticket carries its own messages and no other, on any page, filtered or not', async (t) => {
  const d = await desk(t);
  const other = (await call(d.app, '/api/admin/support/categories', { body: { name: 'Bugs' } })).json().id;
  for (const [i, categoryID] of [d.categoryId, other, d.categoryId, other, d.categoryId].entries()) {
    const id = await openTicket(d, { categoryID, message: `first of ${i}` });
    const reply = await call(d.app, `/api/support/tickets/${id}/messages`, {
      body: { accountID: String(d.staff.id), isAdmin: 'true', message: `reply to ${i}` },
    });
    t.equal(reply.statusCode, 200, reply.body);
  }
  const pages = {
    'limit=2&offset=1': [3, 2],
    'offset=3': [1, 0],
    'limit=1': [4],
    [`categoryID=${other}`]: [3, 1],
    [`categoryID=${d.categoryId}&limit=2&offset=1`]: [2, 0],
  };
  for (const [query, numbers] of Object.entries(pages)) {
    const list = (await call(d.app, `/api/support/tickets?${query}`)).json();
    t.same(
      list.map((x: any) => x.messages.map((m: any) => m.message)),
      numbers.map((i) => [`first of ${i}`, `reply to ${i}`]),
      query,
    );
  }
});

t.test('GET with a form content type and an empty body, and trailing slashes, are tolerated', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  for (const url of ['/api/support/tickets', '/api/support/tickets/', `/api/support/tickets/${id}`, `/api/support/tickets/${id}/`]) {
    const res = await call(d.app, url, { headers });
    t.equal(res.statusCode, 200, url);
  }
});

t.test('a single ticket has its category object and messages; unknown ids are TICKET_NOT_FOUND', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d, { title: 'Refund', message: 'Please' });
  const got = await ticket(d, id);
  t.same(Object.keys(got).sort(), ['accountID', 'category', 'categoryID', 'creationDate', 'id', 'messages', 'readStatus', 'statusID', 'title', 'updateDate']);
  t.same(got.category, { id: d.categoryId, name: 'Payments' });
  t.equal(got.messages.length, 1);
  t.equal(got.messages[0].message, 'Please');
  for (const missing of ['999', '0', '999999999999999999']) {
    const res = await call(d.app, `/api/support/tickets/${missing}`);
    t.equal(res.statusCode, 404, missing);
    t.match(res.json(), { status: false, error: 'TICKET_NOT_FOUND' });
  }
  const bad = await call(d.app, '/api/support/tickets/abc');
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { error: 'VALIDATION_ERROR', message: /id/ });
});

t.test('close sets status 4 and updateDate; a second close changes nothing; any body is tolerated', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  await SupportTicket.update(d.app.db, Number(id), { updateDate: OLD });

  // The chat bot closes with no body and no Content-Type.
  const res = await d.app.inject({ method: 'POST', url: `/api/support/tickets/${id}/close`, headers: { 'x-api-key': ADMIN_KEY } });
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), { success: true, data: { id } });
  const closed = await ticket(d, id);
  t.equal(closed.statusID, '4');
  t.not(closed.updateDate, OLD, 'updateDate moves');
  t.ok(closed.updateDate <= now());

  await SupportTicket.update(d.app.db, Number(id), { updateDate: OLD });
  for (const as of ENCODINGS) {
    const again = await call(d.app, `/api/support/tickets/${id}/close`, { as, body: {} });
    t.equal(again.statusCode, 200, `closing again (${as})`);
    t.same(again.json(), { success: true, data: { id } });
  }
  const still = await ticket(d, id);
  t.equal(still.statusID, '4');
  t.equal(still.updateDate, OLD, 'closing a closed ticket is a no-op');

  for (const url of ['/api/support/tickets/999/close', '/api/support/tickets/999999999999999999/close']) {
    const missing = await call(d.app, url, { method: 'POST' });
    t.equal(missing.statusCode, 404);
    t.match(missing.json(), { status: false, error: 'TICKET_NOT_FOUND' });
  }
});

t.test('every ticket state can be closed', async (t) => {
  const d = await desk(t);
  for (const statusID of ['1', '2', '3']) {
    const id = await openTicket(d, { statusID });
    const res = await call(d.app, `/api/support/tickets/${id}/close`, { method: 'POST' });
    t.equal(res.statusCode, 200);
    t.equal((await ticket(d, id)).statusID, '4', `from ${statusID}`);
  }
});

t.test("ticketsOf serves a user's tickets without messages, newest first", async (t) => {
  const d = await desk(t);
  const first = await openTicket(d);
  await openTicket(d, { accountID: String(d.staff.id) });
  const second = await openTicket(d, { title: 'Second' });
  const rows = await d.app.services.get(supportRef).ticketsOf(d.player.id);
  t.same(
    rows.map((r) => r.id),
    [second, first],
  );
  t.same(Object.keys(rows[0]!).sort(), ['accountID', 'categoryID', 'categoryName', 'creationDate', 'id', 'readStatus', 'statusID', 'title', 'updateDate']);
  t.match(rows[0], { title: 'Second', categoryName: 'Payments', statusID: '1', accountID: String(d.player.id) });
  t.same(await d.app.services.get(supportRef).ticketsOf(999), []);

  const served = await call(d.app, `/api/users/${d.player.id}/tickets`);
  t.equal(served.statusCode, 200);
  t.same(served.json(), rows, 'the users feature serves them as they are');
  const unknown = await call(d.app, '/api/users/999/tickets');
  t.equal(unknown.statusCode, 404);
  t.match(unknown.json(), { status: false, error: 'USER_NOT_FOUND' });
});

t.test('timestamps are shown in the site time zone', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const [stored] = await SupportMessage.select(d.app.db);
  await d.app.settings.update({ timezone: 'Asia/Tokyo' });
  const shown = displayTimestamp(stored!.creationDate, 'Asia/Tokyo');
  t.not(shown, stored!.creationDate);
  const got = await ticket(d, id);
  t.equal(got.creationDate, shown);
  t.equal(got.messages[0].creationDate, shown);
  t.equal((await call(d.app, '/api/support/tickets')).json()[0].updateDate, shown);
  t.equal((await call(d.app, `/api/support/tickets/${id}/messages`)).json()[0].creationDate, shown);
});
