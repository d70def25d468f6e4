/** Admin API of the users feature (decisions.md §8): roles, a user's isVerified, linked accounts. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../core/errors.ts';
import { boolish, idParam, ok, toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import { profileOf, type Ctx } from './routes.ts';
import { ProfileRow, RoleRow, roleRow } from './schemas.ts';
import type { DbUsersService, RoleFields } from './service.ts';

const tags = ['admin'];
const RoleParams = idParam('roleId');
const UserParams = idParam('userId');
const LinkParams = Type.Object({
  userId: UserParams.properties.userId,
  platform: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$', description: 'platform name, e.g. `chat`' }),
});

/** CSS snippets: text columns hold 64 KiB, which 16000 characters never exceed in any encoding. */
const css = () => Type.Union([Type.String({ maxLength: 16000 }), Type.Null()]);
const RoleFieldSchemas = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  slug: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'lower-case; made from the name when omitted' }),
  priority: Type.Integer({ minimum: -2147483648, maximum: 2147483647 }),
  chatRoleID: Type.String({ maxLength: 32 }),
  usernameCSS: css(),
  badgeCSS: css(),
};
const RoleCreateBody = Type.Object({
  ...Type.Partial(Type.Object(RoleFieldSchemas)).properties,
  name: RoleFieldSchemas.name,
});
const RolePatchBody = Type.Partial(Type.Object(RoleFieldSchemas));

function patchOf(body: Partial<RoleFields>): Partial<RoleFields> {
  const patch = { ...body };
  // Forms cannot send null: an empty CSS field clears it.
  for (const key of ['usernameCSS', 'badgeCSS'] as const) if (patch[key] === '') patch[key] = null;
  return patch;
}

function slugOf(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);
  if (!slug) throw new DomainError('VALIDATION_ERROR', 'slug is required: the name holds no letters or digits to make one from');
  return slug;
}

export async function adminRoutes(fastify: FastifyInstance, users: DbUsersService, ctx: Ctx): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();

  app.get('/api/admin/roles', {
    schema: { tags, summary: 'Every role', response: { 200: Type.Array(RoleRow) } },
  }, async () => (await users.listRoles()).map(roleRow));

  app.post('/api/admin/roles', {
    schema: { tags, summary: 'Create a role', body: RoleCreateBody, response: { 201: RoleRow }, errors: ['CONFLICT'] },
  }, async (request, reply) => {
    const patch = patchOf(request.body);
    const role = await users.createRole({
      name: patch.name!, slug: patch.slug ?? slugOf(patch.name!), priority: patch.priority ?? 0, chatRoleID: patch.chatRoleID ?? '',
      usernameCSS: patch.usernameCSS ?? null, badgeCSS: patch.badgeCSS ?? null,
    });
    return reply.code(201).send(roleRow(role));
  });

  app.get('/api/admin/roles/:roleId', {
    schema: { tags, summary: 'One role', params: RoleParams, response: { 200: RoleRow }, errors: ['ROLE_NOT_FOUND'] },
  }, async (request) => roleRow(await users.requireRole(Number(request.params.roleId))));

  app.patch('/api/admin/roles/:roleId', {
    schema: { tags, summary: 'Change a role', params: RoleParams, body: RolePatchBody, response: { 200: RoleRow }, errors: ['ROLE_NOT_FOUND', 'CONFLICT'] },
  }, async (request) => roleRow(await users.updateRole(Number(request.params.roleId), patchOf(request.body))));

  app.delete('/api/admin/roles/:roleId', {
    schema: { tags, summary: 'Delete a role and take it from everyone holding it', params: RoleParams, response: { 200: ok() }, errors: ['ROLE_NOT_FOUND'] },
  }, async (request) => {
    const { roleId } = request.params;
    if (!await users.deleteRole(Number(roleId))) throw new DomainError('ROLE_NOT_FOUND', `No role with ID ${roleId}.`);
    return { status: true as const };
  });

  app.patch('/api/admin/users/:userId', {
    schema: {
      tags, summary: 'Mark a user verified or not', params: UserParams,
      body: Type.Object({ isVerified: boolish() }), response: { 200: ProfileRow }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => {
    const { id } = await users.requireById(Number(request.params.userId));
    await users.setVerified(id, toBool(request.body.isVerified));
    return profileOf(users, { id }, ctx);
  });

  app.put('/api/admin/users/:userId/linked-accounts/:platform', {
    schema: {
      tags, summary: 'Link an external account (a link the external ID had to another user moves here)', params: LinkParams,
      body: Type.Object({ externalID: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: ProfileRow }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => {
    const { userId, platform } = request.params;
    const { id } = await users.requireById(Number(userId));
    await users.linkAccount(id, platform, request.body.externalID);
    return profileOf(users, { id }, ctx);
  });

  app.delete('/api/admin/users/:userId/linked-accounts/:platform', {
    schema: { tags, summary: 'Remove a linked external account', params: LinkParams, response: { 200: ProfileRow }, errors: ['USER_NOT_FOUND', 'NOT_FOUND'] },
  }, async (request) => {
    const { userId, platform } = request.params;
    const { id } = await users.requireById(Number(userId));
    if (!await users.unlinkAccount(id, platform)) throw new DomainError('NOT_FOUND', `User ${id} has no ${platform} account linked.`);
    return profileOf(users, { id }, ctx);
  });
}
