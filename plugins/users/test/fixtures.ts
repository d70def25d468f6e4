/** The users feature's own set-up; accounts, snapshots and error tables are in test/fixtures.ts. */
import type { FastifyInstance } from 'fastify';
import { created } from '../../../test/fixtures.ts';
import { usersRef } from '../contract.ts';
import type { DbUsersService } from '../service.ts';

/** The users service as the feature made it (its admin methods included). */
export function usersService(app: FastifyInstance): DbUsersService {
  return app.services.get(usersRef) as DbUsersService;
}

export interface RoleRowBody {
  id: string;
  name: string;
  slug: string;
  usernameCSS: string | null;
  badgeCSS: string | null;
  priority: string;
  chatRoleID: string;
}

/** A role made through the admin API. */
export async function newRole(app: FastifyInstance, name: string, priority = 0, chatRoleID = ''): Promise<RoleRowBody> {
  return (await created(app, '/api/admin/roles', { name, priority: String(priority), chatRoleID })) as RoleRowBody;
}

export { USERS_TABLES } from '../../../test/fixtures.ts';
