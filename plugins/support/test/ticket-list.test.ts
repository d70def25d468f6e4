import t from 'tap';
import { sql } from '../../../core/sql.ts';
import { call } from '../../../test/helper.ts';
import { supportRef, type TicketFilter } from '../contract.ts';
import { SupportCategory, SupportMessage, SupportTicket } from '../entities.ts';
import { desk, openTicket } from './fixtures.ts';

t.test("each ticket list answers its tickets as they are now: a ticket's JSON is kept only while its fields and messages are unchanged", async (t) => {
  const d = await desk(t);
  const support = d.app.services.get(supportRef);
  const reply = async (id: string, message: string) => {
    const res = await call(d.app, `/api/support/tickets/${id}/messages`, { body: { accountID: String(d.staff.id), isAdmin: 'true', message }, as: 'json' });
    t.equal(res.statusCode, 200, res.body);
  };
  // The service formats every ticket afresh on every call: the list must answer the very same.
  const listed = async (why: string, query = '', filter: TicketFilter = {}) => {
    const res = await call(d.app, `/api/support/tickets${query}`);
    t.equal(res.statusCode, 200, res.body);
    t.strictSame(res.json(), await support.listTickets(filter), why);
    return res.json() as { id: string; title: string; statusID: string; categoryName: string; updateDate: string; messages: { message: string }[] }[];
  };
  const [a, b, c] = [await openTicket(d, { title: 'A' }), await openTicket(d, { title: 'B' }), await openTicket(d, { title: 'C' })];
  await reply(a, 'first reply');
  t.same(
    (await listed('three tickets')).map((x) => x.id),
    [c, b, a],
  );
  t.equal((await call(d.app, '/api/support/tickets')).body, (await call(d.app, '/api/support/tickets')).body, 'unchanged, the same answer');

  await reply(b, 'a reply to B');
  t.same((await listed('a reply added')).find((x) => x.id === b)!.messages.at(-1)!.message, 'a reply to B');
  t.equal((await call(d.app, `/api/support/tickets/${c}/close`, { method: 'POST' })).statusCode, 200);
  t.equal((await listed('a ticket closed')).find((x) => x.id === c)!.statusID, '4');
  await SupportTicket.update(d.app.db, Number(a), { title: 'A, renamed elsewhere' });
  t.equal((await listed('a title changed by another instance')).find((x) => x.id === a)!.title, 'A, renamed elsewhere');
  await d.app.db.run(sql`update ${SupportMessage} set ${SupportMessage.c.message} = ${'edited'} where ${SupportMessage.c.ticketId} = ${Number(a)}`);
  t.same(
    (await listed('messages edited by another instance')).find((x) => x.id === a)!.messages.map((m) => m.message),
    ['edited', 'edited'],
  );
  await d.app.db.run(sql`delete from ${SupportMessage} where ${SupportMessage.c.message} = ${'a reply to B'}`);
  t.equal((await listed('a message gone')).find((x) => x.id === b)!.messages.length, 1);
  await SupportCategory.update(d.app.db, Number(d.categoryId), { name: 'Billing' });
  t.same(
    (await listed('the category renamed')).map((x) => x.categoryName),
    ['Billing', 'Billing', 'Billing'],
  );
  const before = (await listed('before the time zone')).find((x) => x.id === a)!.updateDate;
  await d.app.settings.update({ timezone: 'Asia/Tokyo' });
  t.not((await listed('the site in another time zone')).find((x) => x.id === a)!.updateDate, before);
  // Filters and pages answer subsets; the next whole list still holds every ticket as it is.
  t.same(
    (await listed('closed only', '?statusID=4', { statusId: 4 })).map((x) => x.id),
    [c],
  );
  t.same(
    (await listed('one a page', '?limit=1&offset=1', { limit: 1, offset: 1 })).map((x) => x.id),
    [b],
  );
  await SupportTicket.update(d.app.db, Number(b), { title: 'B, while filtered out' });
  t.equal((await listed('the whole list again')).find((x) => x.id === b)!.title, 'B, while filtered out');
  await d.app.db.run(sql`delete from ${SupportMessage} where ${SupportMessage.c.ticketId} = ${Number(c)}`);
  await d.app.db.run(sql`delete from ${SupportTicket} where ${SupportTicket.c.id} = ${Number(c)}`);
  t.same(
    (await listed('a ticket gone')).map((x) => x.id),
    [b, a],
  );
});
