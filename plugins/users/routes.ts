/** api.md's Users endpoints, then the admin API of decisions.md §8: roles, a user's isVerified, linked accounts. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import type { FeatureContext } from '../../core/feature-context.ts';
import { boolish, idParam, ok, toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import { UserRefParams, type Grantor, type RoleAssignment } from './contract.ts';
import { ProfileRow, RoleCreateBody, RolePatchBody, RoleRow, UserRoleRow, newRole, parseExpiry, patchOf, profileRow, roleRow, userRoleRow } from './schemas.ts';
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
const PRIVILEGED_NOTE =
  'A privileged role (one that opens the staff console, or that a feature marks privileged) needs a key with the `admin` scope: ' +
  'FORBIDDEN otherwise, and nothing changes.';
/** A key with the admin scope acts for an admin: it may grant a privileged role. */
const grantor = (request: FastifyRequest): Grantor => ({ admin: request.apiKey?.scopes.includes('admin') ?? false });

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

  app.get(
    '/api/users',
    {
      // The game plugin looks players up here and reads `error` into its enum (docs/clients.md).
      config: { clientErrors: gamePlugin() },
      schema: {
        tags,
        summary: 'A user profile, by ID or by username (case-insensitive); exactly one of them',
        errors: ['USER_NOT_FOUND'],
        querystring: Type.Object({
          userID: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
          username: Type.Optional(Type.String({ minLength: 1 })),
        }),
        response: { 200: ProfileRow },
      },
    },
    async (request) => {
      const { userID, username } = request.query;
      if ((userID === undefined) === (username === undefined)) {
        throw new DomainError('VALIDATION_ERROR', 'Give exactly one of the query parameters userID and username.');
      }
      return profileOf(users, userID !== undefined ? { id: Number(userID) } : { username: username! }, ctx);
    },
  );
  app.get(
    '/api/users/:userId',
    {
      schema: {
        tags,
        summary: 'A user profile; `<userId>` is a user ID or a username (the older path form of GET /api/users)',
        params: UserRefParams,
        response: { 200: ProfileRow },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      // The profile is read directly by ID or name: one statement, not a lookup and then the profile.
      const profile = await users.findProfileByIdOrUsername(request.params.userId);
      if (!profile) throw new DomainError('USER_NOT_FOUND', `No user with ID or username "${request.params.userId}".`);
      return profileRow(profile, settings.get().timezone);
    },
  );

  app.get(
    '/api/users/:userId/roles',
    {
      schema: {
        tags,
        summary: 'The roles a user holds now; `<userId>` may also be a username',
        params: UserRefParams,
        response: { 200: RoleList },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      const { id } = await users.requireByIdOrUsername(request.params.userId);
      return roleRows(await users.rolesOf(id));
    },
  );

  app.post(
    '/api/users/:userId/roles',
    {
      schema: {
        tags,
        summary: "Grant a role, or set the expiry of one held; answers with the user's roles",
        description: PRIVILEGED_NOTE,
        params: UserParams,
        body: RoleBody,
        response: { 200: RoleList },
        errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    async (request) => {
      const { body } = request;
      return roleRows(
        await users.grantRole(Number(request.params.userId), body.roleID, parseExpiry(body.expiryDate, settings.get().timezone), grantor(request)),
      );
    },
  );

  app.patch(
    '/api/users/:userId/roles/:role',
    {
      schema: {
        tags,
        summary: 'Move a held role to another roleID and/or change its expiry',
        description: PRIVILEGED_NOTE,
        params: UserRoleParams,
        body: RoleBody,
        response: { 200: RoleList },
        errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    async (request) => {
      const {
        params: { userId, role },
        body,
      } = request;
      return roleRows(await users.moveRole(Number(userId), Number(role), body.roleID, parseExpiry(body.expiryDate, settings.get().timezone), grantor(request)));
    },
  );

  app.delete(
    '/api/users/:userId/roles/:role',
    {
      schema: {
        tags,
        summary: 'Take a role away; answers with the roles left',
        description: PRIVILEGED_NOTE,
        params: UserRoleParams,
        response: { 200: RoleList },
        errors: ['USER_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    async (request) => {
      const { userId, role } = request.params;
      const { id } = await users.requireById(Number(userId));
      if (!(await users.revokeRole(id, Number(role), grantor(request)))) throw new DomainError('ROLE_NOT_FOUND', `User ${id} does not hold role ${role}.`);
      return roleRows(await users.rolesOf(id));
    },
  );
}

// ---- admin

const admin = ['admin'];
const RoleParams = idParam('roleId');
const LinkParams = Type.Object({
  userId: UserParams.properties.userId,
  platform: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$', description: 'platform name, e.g. `chat`' }),
});

/** CSS snippets: text columns hold 64 KiB, which 16000 characters never exceed in any encoding. */
export async function adminRoutes(fastify: FastifyInstance, users: DbUsersService, ctx: Ctx): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();

  app.get(
    '/api/admin/roles',
    {
      schema: { tags: admin, summary: 'Every role', response: { 200: Type.Array(RoleRow) } },
    },
    async () => (await users.listRoles()).map(roleRow),
  );

  app.post(
    '/api/admin/roles',
    {
      schema: { tags: admin, summary: 'Create a role', body: RoleCreateBody, response: { 201: RoleRow }, errors: ['CONFLICT'] },
    },
    async (request, reply) => {
      return reply.code(201).send(roleRow(await users.createRole(newRole(request.body))));
    },
  );

  app.get(
    '/api/admin/roles/:roleId',
    {
      schema: { tags: admin, summary: 'One role', params: RoleParams, response: { 200: RoleRow }, errors: ['ROLE_NOT_FOUND'] },
    },
    async (request) => roleRow(await users.requireRole(Number(request.params.roleId))),
  );

  app.patch(
    '/api/admin/roles/:roleId',
    {
      schema: {
        tags: admin,
        summary: 'Change a role',
        params: RoleParams,
        body: RolePatchBody,
        response: { 200: RoleRow },
        errors: ['ROLE_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request) => roleRow(await users.updateRole(Number(request.params.roleId), patchOf(request.body))),
  );

  app.delete(
    '/api/admin/roles/:roleId',
    {
      schema: {
        tags: admin,
        summary: 'Delete a role and take it from everyone holding it',
        params: RoleParams,
        response: { 200: ok() },
        errors: ['ROLE_NOT_FOUND'],
      },
    },
    async (request) => {
      const { roleId } = request.params;
      if (!(await users.deleteRole(Number(roleId)))) throw new DomainError('ROLE_NOT_FOUND', `No role with ID ${roleId}.`);
      return { status: true as const };
    },
  );

  app.patch(
    '/api/admin/users/:userId',
    {
      schema: {
        tags: admin,
        summary: 'Mark a user verified or not',
        params: UserParams,
        body: Type.Object({ isVerified: boolish() }),
        response: { 200: ProfileRow },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      const { id } = await users.requireById(Number(request.params.userId));
      await users.setVerified(id, toBool(request.body.isVerified));
      return profileOf(users, { id }, ctx);
    },
  );

  app.put(
    '/api/admin/users/:userId/linked-accounts/:platform',
    {
      schema: {
        tags: admin,
        summary: 'Link an external account (a link the external ID had to another user moves here)',
        params: LinkParams,
        body: Type.Object({ externalID: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: ProfileRow },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      const { userId, platform } = request.params;
      const { id } = await users.requireById(Number(userId));
      await users.linkAccount(id, platform, request.body.externalID);
      return profileOf(users, { id }, ctx);
    },
  );

  app.delete(
    '/api/admin/users/:userId/linked-accounts/:platform',
    {
      schema: {
        tags: admin,
        summary: 'Remove a linked external account',
        params: LinkParams,
        response: { 200: ProfileRow },
        errors: ['USER_NOT_FOUND', 'NOT_FOUND'],
      },
    },
    async (request) => {
      const { userId, platform } = request.params;
      const { id } = await users.requireById(Number(userId));
      if (!(await users.unlinkAccount(id, platform))) throw new DomainError('NOT_FOUND', `User ${id} has no ${platform} account linked.`);
      return profileOf(users, { id }, ctx);
    },
  );
}
