/** What every support test starts from: a player, a staff member linked to a chat account, a category. */
import type { FastifyInstance } from 'fastify';
import { build, call, type Encoding } from '../../../test/helper.ts';
import { usersRef, type UserAccount } from '../../users/contract.ts';

export interface Desk {
  app: FastifyInstance;
  player: UserAccount;
  staff: UserAccount;
  /** The chat user id linked to `staff`. */
  staffChatId: string;
  categoryId: string;
}

interface TestLike {
  teardown(fn: () => unknown): void;
}

export async function desk(t: TestLike): Promise<Desk> {
  const app = await build(t, { features: ['users', 'support'] });
  const users = app.services.get(usersRef);
  const player = await users.createAccount({ username: 'steve', email: 'steve@example.com', creationIP: '10.0.0.1' });
  const staff = await users.createAccount({ username: 'alex', email: 'alex@example.com', creationIP: '10.0.0.2' });
  const staffChatId = '111111111111111111';
  await users.linkAccount(staff.id, 'chat', staffChatId);
  const res = await call(app, '/api/admin/support/categories', { body: { name: 'Payments' } });
  if (res.statusCode !== 201) throw new Error(`category not created: ${res.body}`);
  return { app, player, staff, staffChatId, categoryId: res.json().id };
}

/** Opens a ticket through the API and returns its id. */
export async function openTicket(d: Desk, fields: Record<string, unknown> = {}, as: Encoding = 'multipart'): Promise<string> {
  const res = await call(d.app, '/api/support/tickets', {
    as, body: { accountID: String(d.player.id), categoryID: d.categoryId, title: 'Lost my items', message: 'Hello', ...fields },
  });
  if (res.statusCode !== 200) throw new Error(`ticket not created: ${res.body}`);
  return res.json().data.id;
}
