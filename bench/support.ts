/**
 * The support desk's ticket list (`GET /api/support/tickets`, every ticket with its category name
 * and messages): 200 tickets of five messages each.
 */
import type { BaseDb } from './base-db.ts';
import { Api, type Scenario } from './scenario.ts';

const MESSAGES_PER_TICKET = 5;

/** Tickets of a player in two categories, each with its first message and replies alternating staff and player. */
async function seed(api: Api, tickets: number): Promise<void> {
  const player = await api.player(4000, 'supported', 0);
  const staff = await api.player(4001, 'staffer', 0);
  const categories = [
    await api.create('/api/admin/support/categories', { name: 'Payments' }),
    await api.create('/api/admin/support/categories', { name: 'Bug reports' }),
  ];
  await Api.batched(tickets, 20, async (i) => {
    const id = await api.create('/api/support/tickets', {
      accountID: player,
      categoryID: categories[i % 2]!,
      title: `Ticket ${i}`,
      message: `<p>I bought rank #${i} but did not get it.</p>\nCan you check?`,
    });
    for (let m = 1; m < MESSAGES_PER_TICKET; m++) {
      const isAdmin = m % 2 === 1;
      await api.create(`/api/support/tickets/${id}/messages`, {
        accountID: isAdmin ? staff : player,
        isAdmin: String(isAdmin),
        message: `Reply ${m} to ticket ${i}: **thanks** 👍`,
      });
    }
  });
}

/** The same two statements the server runs, shaped into the same JSON by hand. */
async function listHandler(db: BaseDb) {
  const tickets = await db.all(
    `select t.id, t.account_id, t.category_id, t.title, t.status_id, t.read_status, t.update_date, t.creation_date,
     coalesce(c.name, '') as category_name from support_tickets t left join support_categories c on c.id = t.category_id
     order by t.id desc`,
  );
  if (tickets.length === 0) return [];
  const byTicket = new Map<number, object[]>();
  const list = tickets.map((t) => {
    const messages: object[] = [];
    byTicket.set(Number(t.id), messages);
    return {
      id: String(t.id),
      accountID: String(t.account_id),
      categoryID: String(t.category_id),
      title: t.title,
      statusID: String(t.status_id),
      readStatus: String(t.read_status),
      updateDate: t.update_date,
      creationDate: t.creation_date,
      categoryName: t.category_name,
      messages,
    };
  });
  const messages = await db.all('select m.id, m.ticket_id, m.account_id, m.message, m.write_location, m.creation_date from support_messages m order by m.id');
  for (const m of messages) {
    byTicket.get(Number(m.ticket_id))?.push({
      id: String(m.id),
      accountID: String(m.account_id),
      message: m.message,
      writeLocation: String(m.write_location),
      creationDate: m.creation_date,
    });
  }
  return list;
}

export const scenarios: Scenario[] = [
  {
    name: 'support/tickets',
    readOnly: true,
    async seed(api) {
      await seed(api, 200);
      return [{ method: 'GET', path: '/api/support/tickets' }];
    },
    baseline: { method: 'GET', url: '/api/support/tickets', handler: listHandler },
  },
];
