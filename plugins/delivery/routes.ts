import type { FastifyInstance } from 'fastify';
import { toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import type { CommandInput, DeliveryService, Trigger } from './contract.ts';
import {
  CommandList, CommandParams, CommandRow, CreateCommandBody, CreateServerBody, Deleted, IdParams, PluginQueue, ServerList,
  ServerRow, ServerWithToken, TokenParams, UpdateCommandBody, UpdateServerBody, ValidateBody, Validated,
} from './schemas.ts';

const optionalBool = (v: unknown) => (v === undefined ? undefined : toBool(v));

function commandInput(body: Partial<Record<keyof CommandInput, unknown>>): Partial<CommandInput> {
  const out: Partial<CommandInput> = {};
  if (body.serverID !== undefined) out.serverID = /^[0-9]{1,15}$/.test(String(body.serverID)) ? Number(body.serverID) : 0;
  if (body.command !== undefined) out.command = String(body.command);
  if (body.trigger !== undefined) out.trigger = body.trigger as Trigger;
  if (body.requireOnline !== undefined) out.requireOnline = toBool(body.requireOnline);
  if (body.perUnit !== undefined) out.perUnit = toBool(body.perUnit);
  return out;
}

export async function deliveryRoutes(fastify: FastifyInstance, delivery: DeliveryService): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const tags = ['admin'];
  const id = (p: { id: string }) => Number(p.id);

  app.get('/api/admin/delivery/servers', {
    schema: { tags, summary: 'Game servers that receive commands', response: { 200: ServerList } },
  }, async () => delivery.listServers());
  app.post('/api/admin/delivery/servers', {
    schema: { tags, summary: 'Add a game server; the answer holds its token, shown only here', body: CreateServerBody, response: { 201: ServerWithToken } },
  }, async (request, reply) => reply.code(201).send(await delivery.createServer({ name: request.body.name, isActive: optionalBool(request.body.isActive) ?? true })));
  app.get('/api/admin/delivery/servers/:id', {
    schema: { tags, summary: 'One game server', params: IdParams, response: { 200: ServerRow } },
  }, async (request) => delivery.getServer(id(request.params)));
  app.patch('/api/admin/delivery/servers/:id', {
    schema: { tags, summary: 'Rename or (de)activate a game server', params: IdParams, body: UpdateServerBody, response: { 200: ServerRow } },
  }, async (request) => delivery.updateServer(id(request.params), { name: request.body.name, isActive: optionalBool(request.body.isActive) }));
  app.delete('/api/admin/delivery/servers/:id', {
    schema: { tags, summary: 'Delete a game server, its commands, and cancel what it has not fetched', params: IdParams, response: { 200: Deleted } },
  }, async (request) => {
    await delivery.deleteServer(id(request.params));
    return { status: true as const };
  });
  app.post('/api/admin/delivery/servers/:id/token', {
    schema: { tags, summary: 'Replace a game server\'s token; the old one stops working', params: IdParams, response: { 200: ServerWithToken } },
  }, async (request) => delivery.rotateToken(id(request.params)));

  app.get('/api/admin/store/products/:id/commands', {
    schema: { tags, summary: 'The commands a product runs on game servers', params: IdParams, response: { 200: CommandList } },
  }, async (request) => delivery.listCommands(id(request.params)));
  app.post('/api/admin/store/products/:id/commands', {
    schema: { tags, summary: 'Add a command to a product', params: IdParams, body: CreateCommandBody, response: { 201: CommandRow } },
  }, async (request, reply) => reply.code(201).send(await delivery.createCommand(id(request.params), {
    requireOnline: false, perUnit: false, ...commandInput(request.body),
  } as CommandInput)));
  app.patch('/api/admin/store/products/:id/commands/:commandId', {
    schema: { tags, summary: 'Change a product command', params: CommandParams, body: UpdateCommandBody, response: { 200: CommandRow } },
  }, async (request) => delivery.updateCommand(id(request.params), Number(request.params.commandId), commandInput(request.body)));
  app.delete('/api/admin/store/products/:id/commands/:commandId', {
    schema: { tags, summary: 'Delete a product command', params: CommandParams, response: { 200: Deleted } },
  }, async (request) => {
    await delivery.deleteCommand(id(request.params), Number(request.params.commandId));
    return { status: true as const };
  });

  // The official game plugin's HTTP connection mode, exactly as it calls (with the site's API key; the server token says which server).
  const pluginTags = ['delivery'];
  app.get('/api/command-logs/:token/queue', {
    schema: { tags: pluginTags, summary: 'Commands waiting for this game server (plugin HTTP mode)', params: TokenParams, response: { 200: PluginQueue } },
  }, async (request) => delivery.pluginQueue(request.params.token));
  app.post('/api/command-logs/validate', {
    schema: { tags: pluginTags, summary: 'Take listed commands: one player\'s still-waiting rows, marked done (plugin HTTP mode)', body: ValidateBody, response: { 200: Validated } },
  }, async (request) => ({ commands: await delivery.validate(request.body.token, (request.body.commands ?? []).map(Number)) }));
}
