import type { FastifyInstance } from 'fastify';
import { gamePlugin } from '../../core/clients.ts';
import { toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import type { BazaarService } from './contract.ts';
import {
  AddItemBody,
  CreateServerBody,
  Deleted,
  ItemList,
  ItemParams,
  ItemsQuery,
  ServerList,
  ServerParams,
  ServerRow,
  Success,
  UpdateServerBody,
  UserParams,
} from './schemas.ts';

/** Both bazaar success bodies: api.md says `success`, the game plugin reads `status` (decisions.md §7). */
const DONE = { success: true, status: true } as const;

function serverInput<T extends { isActive?: unknown }>(body: T): Omit<T, 'isActive'> & { isActive?: boolean } {
  return { ...body, isActive: body.isActive === undefined ? undefined : toBool(body.isActive) };
}

export async function bazaarRoutes(fastify: FastifyInstance, bazaar: BazaarService): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const tags = ['bazaar'];

  // The game plugin's bazaar: it reads `error` into its enum, and has a failure code for storing and one for removing (docs/clients.md).
  app.get(
    '/api/bazaar/storages/:user_id/items',
    {
      config: { clientErrors: gamePlugin() },
      schema: {
        tags,
        summary: "A user's stored items, optionally of one server",
        params: UserParams,
        querystring: ItemsQuery,
        response: { 200: ItemList },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => bazaar.itemsOf(Number(request.params.user_id), request.query.serverID),
  );

  app.post(
    '/api/bazaar/storages/:user_id/items',
    {
      config: { idempotent: 'transaction', clientErrors: gamePlugin({ otherwise: 'INSERT_ERROR' }) },
      schema: {
        tags,
        summary: 'Store an item',
        params: UserParams,
        body: AddItemBody,
        response: { 200: Success },
        errors: ['USER_NOT_FOUND', 'SERVER_NOT_FOUND', 'INSERT_ERROR'],
      },
    },
    async (request) => {
      const body = request.body;
      await bazaar.addItem(Number(request.params.user_id), { ...body, base64: body.base64.replaceAll(' ', '+') });
      return DONE;
    },
  );

  app.delete(
    '/api/bazaar/storages/:user_id/items/:id',
    {
      config: { idempotent: 'transaction', clientErrors: gamePlugin({ otherwise: 'DELETE_ERROR' }) },
      schema: { tags, summary: 'Remove a stored item', params: ItemParams, response: { 200: Success }, errors: ['DELETE_ERROR'] },
    },
    async (request) => {
      await bazaar.deleteItem(Number(request.params.user_id), Number(request.params.id));
      return DONE;
    },
  );

  app.get(
    '/api/bazaar/servers',
    {
      schema: { tags, summary: 'Item servers', response: { 200: ServerList } },
    },
    async () => bazaar.listServers(),
  );

  const admin = ['admin'];
  app.get(
    '/api/admin/bazaar/servers',
    {
      schema: { tags: admin, summary: 'Item servers', response: { 200: ServerList } },
    },
    async () => bazaar.listServers(),
  );

  app.post(
    '/api/admin/bazaar/servers',
    {
      schema: { tags: admin, summary: 'Create an item server', body: CreateServerBody, response: { 201: ServerRow }, errors: ['CONFLICT'] },
    },
    async (request, reply) => reply.code(201).send(await bazaar.createServer(serverInput(request.body))),
  );

  app.get(
    '/api/admin/bazaar/servers/:id',
    {
      schema: { tags: admin, summary: 'One item server', params: ServerParams, response: { 200: ServerRow }, errors: ['SERVER_NOT_FOUND'] },
    },
    async (request) => bazaar.getServer(Number(request.params.id)),
  );

  app.patch(
    '/api/admin/bazaar/servers/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change an item server',
        params: ServerParams,
        body: UpdateServerBody,
        response: { 200: ServerRow },
        errors: ['SERVER_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request) => bazaar.updateServer(Number(request.params.id), serverInput(request.body)),
  );

  app.delete(
    '/api/admin/bazaar/servers/:id',
    {
      schema: {
        tags: admin,
        summary: 'Delete an item server that stores no items',
        params: ServerParams,
        response: { 200: Deleted },
        errors: ['SERVER_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request) => {
      await bazaar.deleteServer(Number(request.params.id));
      return { status: true as const };
    },
  );
}
