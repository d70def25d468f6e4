/**
 * The support desk's ticket list (`GET /api/support/tickets`, every ticket with its category name
 * and messages) at two sizes, to show both its cost and how it grows.
 */
import type { FastifyInstance } from 'fastify';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { usersRef } from '../plugins/users/contract.ts';
import { seedPost, type Scenario } from './scenario.ts';

const MESSAGES_PER_TICKET = 5;

/** Tickets of a player in two categories, each with its first message and replies alternating staff and player. */
async function seed(app: FastifyInstance, key: string, tickets: number): Promise<void> {
  const users = app.services.get(usersRef);
  const player = await users.createAccount({ username: 'player', email: 'player@example.com', creationIP: '10.0.0.1' });
  const staff = await users.createAccount({ username: 'staff', email: 'staff@example.com', creationIP: '10.0.0.2' });
  const categories = [
    await seedPost(app, key, '/api/admin/support/categories', { name: 'Payments' }),
    await seedPost(app, key, '/api/admin/support/categories', { name: 'Bug reports' }),
  ];
  const openOne = async (i: number) => {
    const id = await seedPost(app, key, '/api/support/tickets', {
      accountID: String(player.id), categoryID: categories[i % 2]!, title: `Ticket ${i}`,
      message: `<p>I bought rank #${i} but did not get it.</p>\nCan you check?`,
    });
    for (let m = 1; m < MESSAGES_PER_TICKET; m++) {
      const isAdmin = m % 2 === 1;
      await seedPost(app, key, `/api/support/tickets/${id}/messages`, {
        accountID: String(isAdmin ? staff.id : player.id), isAdmin: String(isAdmin), message: `Reply ${m} to ticket ${i}: **thanks** 👍`,
      });
    }
  };
  // In parallel batches: seeding 5,000 rows one transaction at a time would take minutes.
  for (let start = 0; start < tickets; start += 20) {
    await Promise.all(Array.from({ length: Math.min(20, tickets - start) }, (_, k) => openOne(start + k)));
  }
}

interface TicketRow extends RowDataPacket {
  id: number; account_id: number; category_id: number; title: string; status_id: number; read_status: number;
  update_date: string; creation_date: string; category_name: string;
}
interface MessageRow extends RowDataPacket {
  id: number; ticket_id: number; account_id: number; message: string; write_location: number; creation_date: string;
}

/** The same two statements the server runs, shaped into the same JSON by hand. */
function baseline(pool: Pool) {
  return {
    method: 'GET' as const,
    url: '/api/support/tickets',
    async handler() {
      const [tickets] = await pool.query<TicketRow[]>(
        `select t.id, t.account_id, t.category_id, t.title, t.status_id, t.read_status, t.update_date, t.creation_date,
         coalesce(c.name, '') as category_name from support_tickets t left join support_categories c on c.id = t.category_id
         order by t.id desc`);
      if (tickets.length === 0) return [];
      const byTicket = new Map<number, object[]>();
      const list = tickets.map((t) => {
        const messages: object[] = [];
        byTicket.set(t.id, messages);
        return {
          id: String(t.id), accountID: String(t.account_id), categoryID: String(t.category_id), title: t.title,
          statusID: String(t.status_id), readStatus: String(t.read_status), updateDate: t.update_date,
          creationDate: t.creation_date, categoryName: t.category_name, messages,
        };
      });
      const [messages] = await pool.query<MessageRow[]>(
        `select m.id, m.ticket_id, m.account_id, m.message, m.write_location, m.creation_date from support_messages m
         where m.ticket_id in (${[...byTicket.keys()].join(',')}) order by m.id`);
      for (const m of messages) {
        byTicket.get(m.ticket_id)?.push({
          id: String(m.id), accountID: String(m.account_id), message: m.message, writeLocation: String(m.write_location),
          creationDate: m.creation_date,
        });
      }
      return list;
    },
  };
}

function ticketList(name: string, tickets: number): Scenario {
  return {
    name,
    features: ['users', 'support'],
    async prepare(app, key) {
      await seed(app, key, tickets);
      return [{ method: 'GET', path: '/api/support/tickets' }];
    },
    baseline,
  };
}

export const scenarios: Scenario[] = [
  ticketList('support/tickets', 1000),
  ticketList('support/tickets-10', 10),
];
