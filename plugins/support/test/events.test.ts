import t from 'tap';
import { call } from '../../../test/helper.ts';
import { settle } from '../../../test/fixtures.ts';
import { desk, openTicket } from './fixtures.ts';

t.test('created, replied and closed events carry the ids, once per change', async (t) => {
  const d = await desk(t);
  const seen: [string, unknown][] = [];
  d.app.events.on('support.ticket.created', (p) => {
    seen.push(['created', p]);
  });
  d.app.events.on('support.ticket.replied', (p) => {
    seen.push(['replied', p]);
  });
  d.app.events.on('support.ticket.closed', (p) => {
    seen.push(['closed', p]);
  });

  const id = Number(await openTicket(d));
  const staffReply = (await call(d.app, `/api/support/tickets/${id}/messages`, { body: { chatUserID: d.staffChatId, message: 'a', isAdmin: 'true' } })).json()
    .data.id;
  const playerReply = (await call(d.app, `/api/support/tickets/${id}/messages`, { body: { userID: String(d.player.id), message: 'b' } })).json().data.id;
  await call(d.app, `/api/support/tickets/${id}/close`, { method: 'POST' });
  await call(d.app, `/api/support/tickets/${id}/close`, { method: 'POST' });
  await settle();
  t.same(
    seen,
    [
      ['created', { ticketId: id, accountId: d.player.id, title: 'Lost my items' }],
      ['replied', { ticketId: id, messageId: Number(staffReply), accountId: d.staff.id, isAdmin: true }],
      ['replied', { ticketId: id, messageId: Number(playerReply), accountId: d.player.id, isAdmin: false }],
      ['closed', { ticketId: id }],
    ],
    'the second close emits nothing',
  );
});

t.test('refused requests emit nothing', async (t) => {
  const d = await desk(t);
  const id = await openTicket(d, { statusID: '4' });
  const seen: string[] = [];
  for (const name of ['support.ticket.created', 'support.ticket.replied', 'support.ticket.closed'] as const) {
    d.app.events.on(name, () => {
      seen.push(name);
    });
  }
  const refused = [
    await call(d.app, `/api/support/tickets/${id}/messages`, { body: { accountID: String(d.player.id), message: 'late' } }),
    await call(d.app, '/api/support/tickets', { body: { accountID: '999', categoryID: d.categoryId, title: 't', message: 'm' } }),
    await call(d.app, '/api/support/tickets', { body: { accountID: String(d.player.id), categoryID: '999', title: 't', message: 'm' } }),
    await call(d.app, '/api/support/tickets/999/close', { method: 'POST' }),
  ];
  t.same(
    refused.map((r) => r.json().error),
    ['TICKET_CLOSED', 'USER_NOT_FOUND', 'CATEGORY_NOT_FOUND', 'TICKET_NOT_FOUND'],
  );
  await settle();
  t.same(seen, []);
});
