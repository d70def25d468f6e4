/** api.md's Users endpoints. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import type { FeatureContext } from '../../core/features.ts';
import { idParam, type TypeBoxProvider } from '../../core/schemas.ts';
import { UserRefParams, type RoleAssignment } from './contract.ts';
import { ProfileRow, UserRoleRow, parseExpiry, profileRow, userRoleRow } from './schemas.ts';
import type { DbUsersService } from './service.ts';

/** What the users routes need of the host beyond the users service. */
export type Ctx = Pick<FeatureContext<unknown>, 'settings'>;

const tags = ['users'];
const UserParams = idParam('userId');
/** The older path forms name the user by ID or by username (the Kotlin wrapper's profile, roles, tickets, orders). */
const UserRoleParams = Type.Object({ ...UserParams.properties, ...idParam('role').properties });
const RoleBody = Type.Object({
  roleID: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'role ID' }),
  expiryDate: Type.Optional(Type.String({ description: '`YYYY-MM-DD HH:MM:SS`; omitted = permanent (POST) or unchanged (PATCH)' })),
});
const RoleList = Type.Array(UserRoleRow);

/** The profile as api.md shows it, with the fields other features add (`credit`); USER_NOT_FOUND when there is none. */
export async function profileOf(users: DbUsersService, by: { id: number } | { username: string }, { settings }: Ctx): Promise<typeof ProfileRow.static> {
  const profile = await users.findProfile(by);
  if (!profile) throw new DomainError('USER_NOT_FOUND', 'id' in by ? `No user with ID ${by.id}.` : `No user named "${by.username}".`);
  return profileRow(profile, settings.get().timezone);
}

export async function userRoutes(fastify: FastifyInstance, users: DbUsersService, ctx: Ctx): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const { settings } = ctx;
  const roleRows = (held: RoleAssignment[]) => held.map((a) => userRoleRow(a, settings.get().timezone));

  app.get('/api/users', {
    // The game plugin looks players up here and reads `error` into its enum (docs/clients.md).
    config: { clientErrors: gamePlugin() },
    schema: {
      tags, summary: 'A user profile, by ID or by username (case-insensitive); exactly one of them', errors: ['USER_NOT_FOUND'],
      querystring: Type.Object({
        userID: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
        username: Type.Optional(Type.String({ minLength: 1 })),
      }),
      response: { 200: ProfileRow },
    },
  }, async (request) => {
    const { userID, username } = request.query;
    if ((userID === undefined) === (username === undefined)) {
      throw new DomainError('VALIDATION_ERROR', 'Give exactly one of the query parameters userID and username.');
    }
    return profileOf(users, userID !== undefined ? { id: Number(userID) } : { username: username! }, ctx);
  });
  app.get('/api/users/:userId', {
    schema: {
      tags, summary: 'A user profile; `<userId>` is a user ID or a username (the older path form of GET /api/users)',
      params: UserRefParams, response: { 200: ProfileRow }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => profileOf(users, { id: (await users.requireByIdOrUsername(request.params.userId)).id }, ctx));

  app.get('/api/users/:userId/roles', {
    schema: { tags, summary: 'The roles a user holds now; `<userId>` may also be a username', params: UserRefParams, response: { 200: RoleList }, errors: ['USER_NOT_FOUND'] },
  }, async (request) => {
    const { id } = await users.requireByIdOrUsername(request.params.userId);
    return roleRows(await users.rolesOf(id));
  });

  app.post('/api/users/:userId/roles', {
    schema: {
      tags, summary: 'Grant a role, or set the expiry of one held; answers with the user\'s roles',
      params: UserParams, body: RoleBody, response: { 200: RoleList }, errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'],
    },
  }, async (request) => {
    const { body } = request;
    return roleRows(await users.grantRole(Number(request.params.userId), body.roleID, parseExpiry(body.expiryDate, settings.get().timezone)));
  });

  app.patch('/api/users/:userId/roles/:role', {
    schema: {
      tags, summary: 'Move a held role to another roleID and/or change its expiry',
      params: UserRoleParams, body: RoleBody, response: { 200: RoleList }, errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'],
    },
  }, async (request) => {
    const { params: { userId, role }, body } = request;
    return roleRows(await users.moveRole(Number(userId), Number(role), body.roleID, parseExpiry(body.expiryDate, settings.get().timezone)));
  });

  app.delete('/api/users/:userId/roles/:role', {
    schema: { tags, summary: 'Take a role away; answers with the roles left', params: UserRoleParams, response: { 200: RoleList }, errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'] },
  }, async (request) => {
    const { userId, role } = request.params;
    const { id } = await users.requireById(Number(userId));
    if (!await users.revokeRole(id, Number(role))) throw new DomainError('ROLE_NOT_FOUND', `User ${id} does not hold role ${role}.`);
    return roleRows(await users.rolesOf(id));
  });
}
