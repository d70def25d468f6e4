/** What every support test starts from: a player, a staff member linked to a chat account, a category. */
import type { FastifyInstance } from 'fastify';
import { created, newUser, read } from '../../../test/fixtures.ts';
import { build, call, type Encoding, type TestLike } from '../../../test/helper.ts';
import { usersRef, type UserAccount } from '../../users/contract.ts';

/** A time long past, to see a ticket's dates move. */
export const OLD = '2020-01-01 00:00:00';

export interface Desk {
  app: FastifyInstance;
  player: UserAccount;
  staff: UserAccount;
  /** The chat user id linked to `staff`. */
  staffChatId: string;
  categoryId: string;
}

export const SUPPORT_FEATURES = ['users', 'support'];

export async function desk(t: TestLike, databaseUrl?: string): Promise<Desk> {
  const app = await build(t, { features: SUPPORT_FEATURES, databaseUrl });
  const player = await newUser(app, 'steve');
  const staff = await newUser(app, 'alex', { creationIP: '10.0.0.2' });
  const staffChatId = '111111111111111111';
  await app.services.get(usersRef).linkAccount(staff.id, 'chat', staffChatId);
  const category = await created(app, '/api/admin/support/categories', { name: 'Payments' });
  return { app, player, staff, staffChatId, categoryId: category.id };
}

/** Opens a ticket through the API and returns its id. */
export async function openTicket(d: Desk, fields: Record<string, unknown> = {}, as: Encoding = 'multipart'): Promise<string> {
  const res = await call(d.app, '/api/support/tickets', {
    as,
    body: { accountID: String(d.player.id), categoryID: d.categoryId, title: 'Lost my items', message: 'Hello', ...fields },
  });
  if (res.statusCode !== 200) throw new Error(`ticket not created: ${res.body}`);
  return res.json().data.id;
}

/** A ticket as GET /api/support/tickets/:id answers it. */
export function ticket(d: Desk, id: string) {
  return read(d.app, `/api/support/tickets/${id}`);
}
