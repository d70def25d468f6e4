import t from 'tap';
import { ENCODINGS, call, type Encoding } from '../../../test/helper.ts';
import { now } from '../../../core/format.ts';
import { rowCount } from '../../../test/fixtures.ts';
import { SupportTicket } from '../entities.ts';
import { OLD, desk, openTicket, ticket, type Desk } from './fixtures.ts';

async function reply(d: Desk, id: string, body: Record<string, unknown>, as: Encoding = 'multipart') {
  return call(d.app, `/api/support/tickets/${id}/messages`, { as, body });
}

t.test('staff and player replies move the ticket between Answered and User-Reply', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const staff = String(d.staff.id);
  const player = String(d.player.id);
  // [who, isAdmin as sent (undefined = not sent), encoding, expected statusID, readStatus, writeLocation]
  const steps: [string, unknown, Encoding, string, string, string][] = [
    [staff, 'true', 'multipart', '2', '0', '2'],
    [player, 'false', 'multipart', '3', '1', '1'],
    [staff, '1', 'urlencoded', '2', '0', '2'],
    [player, '0', 'urlencoded', '3', '1', '1'],
    [staff, true, 'json', '2', '0', '2'],
    [player, false, 'json', '3', '1', '1'],
    [staff, 1, 'json', '2', '0', '2'],
    [player, undefined, 'multipart', '3', '1', '1'],
    [player, 'false', 'multipart', '3', '1', '1'],
    [staff, 'true', 'multipart', '2', '0', '2'],
    [staff, 'true', 'multipart', '2', '0', '2'],
  ];
  for (const [i, [accountID, isAdmin, as, statusID, readStatus, writeLocation]] of steps.entries()) {
    await SupportTicket.update(d.app.db, Number(id), { updateDate: OLD });
    const body: Record<string, unknown> = { accountID, message: `step ${i}` };
    if (isAdmin !== undefined) body.isAdmin = isAdmin;
    const res = await reply(d, id, body, as);
    t.equal(res.statusCode, 200, `step ${i}: ${res.body}`);
    t.same(Object.keys(res.json()).sort(), ['data', 'success']);
    const got = await ticket(d, id);
    t.equal(got.statusID, statusID, `step ${i} statusID`);
    t.equal(got.readStatus, readStatus, `step ${i} readStatus`);
    t.not(got.updateDate, OLD, `step ${i} updateDate moves`);
    const last = got.messages.at(-1);
    t.same([last.id, last.accountID, last.message, last.writeLocation], [res.json().data.id, accountID, `step ${i}`, writeLocation], `step ${i} message`);
  }
  t.equal((await ticket(d, id)).messages.length, steps.length + 1);
});

t.test('a reply to an Open ticket by the player makes it User-Reply', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  t.equal((await ticket(d, id)).statusID, '1');
  t.equal((await reply(d, id, { accountID: String(d.player.id), message: 'more' })).statusCode, 200);
  t.equal((await ticket(d, id)).statusID, '3');
});

t.test('a closed ticket takes no message', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  await call(d.app, `/api/support/tickets/${id}/close`, { method: 'POST' });
  const before = await ticket(d, id);
  for (const isAdmin of ['true', 'false']) {
    const res = await reply(d, id, { accountID: String(d.staff.id), message: 'too late', isAdmin });
    t.equal(res.statusCode, 400);
    t.match(res.json(), { status: false, error: 'TICKET_CLOSED', message: new RegExp(id) });
  }
  t.same(await ticket(d, id), before, 'status, dates and messages unchanged');
  const openedClosed = await openTicket(d, { statusID: '4' });
  t.match((await reply(d, openedClosed, { accountID: String(d.player.id), message: 'x' })).json(), { error: 'TICKET_CLOSED' });
});

t.test('the author is accountID, its alias userID, or the account linked to chatUserID', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const author = async (body: Record<string, unknown>) => {
    const res = await reply(d, id, { message: 'm', ...body });
    t.equal(res.statusCode, 200, res.body);
    return (await call(d.app, `/api/support/tickets/${id}/messages/${res.json().data.id}`)).json().accountID;
  };
  t.equal(await author({ accountID: String(d.staff.id) }), String(d.staff.id));
  t.equal(await author({ userID: String(d.staff.id), isAdmin: 'true' }), String(d.staff.id), 'the chat bot sends userID');
  t.equal(await author({ chatUserID: d.staffChatId, isAdmin: 'true' }), String(d.staff.id));
  t.equal(await author({ accountID: '', userID: '', chatUserID: d.staffChatId }), String(d.staff.id), 'empty fields count as not given');
  t.equal(await author({ accountID: String(d.player.id), chatUserID: d.staffChatId }), String(d.player.id), 'accountID first');

  const before = await rowCount(d.app, 'support_messages');
  const failures: [Record<string, unknown>, number, string, RegExp][] = [
    [{ accountID: '999' }, 404, 'USER_NOT_FOUND', /999/],
    [{ userID: '999' }, 404, 'USER_NOT_FOUND', /999/],
    [{ chatUserID: '222' }, 404, 'USER_NOT_FOUND', /222/],
    [{}, 400, 'VALIDATION_ERROR', /accountID/],
    [{ accountID: '' }, 400, 'VALIDATION_ERROR', /accountID/],
    [{ accountID: 'alex' }, 400, 'VALIDATION_ERROR', /accountID/],
    [{ accountID: String(d.staff.id), isAdmin: 'yes' }, 400, 'VALIDATION_ERROR', /isAdmin/],
    [{ accountID: String(d.staff.id), message: '' }, 400, 'VALIDATION_ERROR', /message/],
  ];
  for (const [body, status, error, message] of failures) {
    const res = await reply(d, id, { message: 'm', ...body });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.match(res.json(), { status: false, error, message }, JSON.stringify(body));
  }
  const noMessage = await call(d.app, `/api/support/tickets/${id}/messages`, { body: { accountID: String(d.player.id) } });
  t.match(noMessage.json(), { error: 'VALIDATION_ERROR', message: /message/ });
  t.equal(await rowCount(d.app, 'support_messages'), before, 'nothing was stored');
});

t.test('posting to an unknown ticket is TICKET_NOT_FOUND; a malformed id is VALIDATION_ERROR', async (t) => {
  const d = await desk(t);
  for (const id of ['999', '999999999999999999']) {
    const res = await reply(d, id, { accountID: String(d.player.id), message: 'm' });
    t.equal(res.statusCode, 404);
    t.match(res.json(), { error: 'TICKET_NOT_FOUND' });
  }
  const bad = await reply(d, 'abc', { accountID: String(d.player.id), message: 'm' });
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { error: 'VALIDATION_ERROR', message: /ticketId/ });
});

t.test('messages are listed with supportID, oldest first, filtered and paged', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d, { message: 'first' });
  const other = await openTicket(d, { message: 'elsewhere' });
  const ids = [(await ticket(d, id)).messages[0].id];
  for (const [who, text] of [
    [d.staff.id, 'second'],
    [d.player.id, 'third'],
    [d.staff.id, 'fourth'],
  ] as const) {
    ids.push((await reply(d, id, { accountID: String(who), message: text, isAdmin: String(who === d.staff.id) })).json().data.id);
  }
  const list = async (query = '') => {
    const res = await call(d.app, `/api/support/tickets/${id}/messages${query}`);
    t.equal(res.statusCode, 200, query);
    return res.json();
  };
  const all = await list();
  t.same(
    all.map((m: any) => m.id),
    ids,
  );
  t.same(
    all.map((m: any) => m.message),
    ['first', 'second', 'third', 'fourth'],
  );
  t.same(Object.keys(all[1]).sort(), ['accountID', 'creationDate', 'id', 'message', 'supportID', 'writeLocation']);
  t.ok(all.every((m: any) => m.supportID === id));
  t.same(
    all.map((m: any) => m.writeLocation),
    ['1', '2', '1', '2'],
  );
  t.same(
    (await list(`?accountID=${d.staff.id}`)).map((m: any) => m.message),
    ['second', 'fourth'],
  );
  t.same(
    (await list('?limit=2&offset=1')).map((m: any) => m.message),
    ['second', 'third'],
  );
  t.same(
    (await list('?offset=3')).map((m: any) => m.message),
    ['fourth'],
  );
  t.same(
    (await call(d.app, `/api/support/tickets/${other}/messages`)).json().map((m: any) => m.message),
    ['elsewhere'],
  );
  const missing = await call(d.app, '/api/support/tickets/999/messages');
  t.equal(missing.statusCode, 404);
  t.match(missing.json(), { error: 'TICKET_NOT_FOUND' });
  const bad = await call(d.app, `/api/support/tickets/${id}/messages?limit=-3`);
  t.match(bad.json(), { error: 'VALIDATION_ERROR', message: /limit/ });
});

t.test('one message, only under its own ticket', async (t) => {
  const d = await desk(t);
  const a = await openTicket(d, { message: 'in a' });
  const b = await openTicket(d, { message: 'in b' });
  const inA = (await ticket(d, a)).messages[0].id;
  const inB = (await ticket(d, b)).messages[0].id;
  const res = await call(d.app, `/api/support/tickets/${a}/messages/${inA}`);
  t.equal(res.statusCode, 200);
  t.same(res.json(), {
    id: inA,
    accountID: String(d.player.id),
    message: 'in a',
    writeLocation: '1',
    creationDate: (await ticket(d, a)).creationDate,
    supportID: a,
  });
  for (const [ticket, message, error] of [
    [a, inB, 'MESSAGE_NOT_FOUND'],
    [a, '999', 'MESSAGE_NOT_FOUND'],
    [a, '999999999999999999', 'MESSAGE_NOT_FOUND'],
    ['999', inA, 'TICKET_NOT_FOUND'],
  ]) {
    const miss = await call(d.app, `/api/support/tickets/${ticket}/messages/${message}`);
    t.equal(miss.statusCode, 404, `${ticket}/${message}`);
    t.match(miss.json(), { status: false, error }, `${ticket}/${message}`);
  }
  t.match((await call(d.app, `/api/support/tickets/${a}/messages/x`)).json(), { error: 'VALIDATION_ERROR' });
});

t.test('message text is stored and returned exactly as sent', async (t) => {
  const d = await desk(t);
  const texts = [
    '<p>Hello <b>staff</b></p><script>alert("x")</script>',
    '**bold** _it_ [link](https://example.com/?a=1&b=2+3) `code`',
    'line one\nline two\r\nline three\n\n',
    '  leading and trailing spaces  ',
    'emoji 😀👍🏽 ünïcødé 日本語 ‮rtl',
    'a+b=c&d=%20e%ZZ',
    'quotes \' " \\ backslash \t tab',
  ];
  for (const as of ENCODINGS) {
    const id = await openTicket(d, { message: texts[0] }, as);
    t.equal((await ticket(d, id)).messages[0].message, texts[0], `first message (${as})`);
    for (const text of texts) {
      const res = await reply(d, id, { accountID: String(d.player.id), message: text }, as);
      t.equal(res.statusCode, 200, `${as}: ${JSON.stringify(text)}`);
      const one = await call(d.app, `/api/support/tickets/${id}/messages/${res.json().data.id}`);
      t.equal(one.json().message, text, `${as}: ${JSON.stringify(text)}`);
    }
    t.same(
      (await ticket(d, id)).messages.slice(1).map((m: any) => m.message),
      texts,
      `${as}: in the ticket`,
    );
  }
});

t.test('a NUL character is refused in every stored text, whatever the encoding', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const player = String(d.player.id);
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [`/api/support/tickets/${id}/messages`, { accountID: player, message: 'a\u0000b' }, /message/],
    [`/api/support/tickets/${id}/messages`, { chatUserID: '1\u00002', message: 'm' }, /chatUserID/],
    ['/api/support/tickets', { accountID: player, categoryID: d.categoryId, title: 't', message: '\u0000' }, /message/],
    ['/api/support/tickets', { accountID: player, categoryID: d.categoryId, title: 't\u0000', message: 'm' }, /title/],
    ['/api/admin/support/categories', { name: 'n\u0000' }, /name/],
    ['/api/admin/support/answers', { title: 't', content: '<p>\u0000</p>' }, /content/],
  ];
  for (const as of ENCODINGS) {
    for (const [url, body, field] of cases) {
      const res = await call(d.app, url, { as, body });
      t.equal(res.statusCode, 400, `${as} ${url} ${field}`);
      t.match(res.json(), { status: false, error: 'VALIDATION_ERROR', message: field });
    }
  }
  t.equal(await rowCount(d.app, 'support_messages'), 1, 'nothing stored');
  t.equal((await call(d.app, '/api/support/categories')).json().length, 1);
});

t.test('a message as long as the 64 KiB field limit is kept whole; a longer one is refused', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  const longest = '😀'.repeat(16384); // 65,536 bytes of 4-byte characters
  t.equal(Buffer.byteLength(longest), 65536);
  const res = await reply(d, id, { accountID: String(d.player.id), message: longest });
  t.equal(res.statusCode, 200, res.body.slice(0, 200));
  const back = (await call(d.app, `/api/support/tickets/${id}/messages/${res.json().data.id}`)).json().message;
  t.equal(back.length, longest.length);
  t.ok(back === longest, 'byte for byte');

  const before = await rowCount(d.app, 'support_messages');
  for (const as of ENCODINGS) {
    const tooLong = await reply(d, id, { accountID: String(d.player.id), message: `${longest}x` }, as);
    t.equal(tooLong.statusCode, 413, as);
    t.match(tooLong.json(), { status: false, error: 'PAYLOAD_TOO_LARGE' });
  }
  t.equal(await rowCount(d.app, 'support_messages'), before);
});

t.test('updateDate and creationDate of a reply are the time of the reply', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d);
  await SupportTicket.update(d.app.db, Number(id), { updateDate: OLD, creationDate: OLD });
  const before = now();
  await reply(d, id, { accountID: String(d.staff.id), message: 'x', isAdmin: 'true' });
  const got = await ticket(d, id);
  t.equal(got.creationDate, OLD, 'creationDate stays');
  t.ok(got.updateDate >= before && got.updateDate <= now());
  t.equal(got.messages.at(-1).creationDate, got.updateDate);
});

t.test('a close racing replies: replies before it are kept, none lands after it', async (t) => {
  const d = await desk(t);
  // Several rounds, the close sent amid JSON replies, so that some reply reads the ticket before
  // the close commits and writes after it: only the row lock keeps such a reply out.
  for (let round = 0; round < 10; round++) {
    const id = await openTicket(d);
    const send = (i: number) => reply(d, id, { accountID: String(d.staff.id), message: `r${i}`, isAdmin: true }, 'json');
    const early = Array.from({ length: 4 }, (_, i) => send(i));
    const close = call(d.app, `/api/support/tickets/${id}/close`, { method: 'POST' });
    const late = Array.from({ length: 4 }, (_, i) => send(4 + i));
    t.equal((await close).statusCode, 200);
    const outcomes = (await Promise.all([...early, ...late])).map((r) => (r.statusCode === 200 ? 'ok' : r.json().error));
    t.ok(
      outcomes.every((o) => o === 'ok' || o === 'TICKET_CLOSED'),
      outcomes.join(' '),
    );
    const got = await ticket(d, id);
    t.equal(got.statusID, '4', `round ${round}: no reply reopened the closed ticket`);
    t.equal(got.messages.length, 1 + outcomes.filter((o) => o === 'ok').length, 'every accepted reply is stored, no refused one');
  }
});
