import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { sendJsonText } from '../../core/schema-compilers.ts';
import { toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import type { CommandInput, DeliveryService, Trigger } from './contract.ts';
import {
  AckBody,
  Acked,
  AckNotSettled,
  ChargebackBody,
  ClaimBody,
  Claimed,
  CommandList,
  CommandParams,
  CommandRow,
  CreateCommandBody,
  CreateServerBody,
  Deleted,
  IdParams,
  PluginQueue,
  QueueList,
  QueueQuery,
  QueueRow,
  ServerList,
  ServerRow,
  ServerWithToken,
  StreamQuery,
  TokenParams,
  UpdateCommandBody,
  UpdateServerBody,
  ValidateBody,
  Validated,
} from './schemas.ts';
import type { Wakeups } from './wakeups.ts';

export interface StreamOptions {
  wakeups: Wakeups;
  heartbeatSeconds: number;
  /** Open streams per game server; a new one ends the oldest. */
  perServer: number;
  maxSeconds: number;
}

const optionalBool = (v: unknown) => (v === undefined ? undefined : toBool(v));

export function commandInput(body: Partial<Record<keyof CommandInput, unknown>>): Partial<CommandInput> {
  const out: Partial<CommandInput> = {};
  if (body.serverID !== undefined) out.serverID = /^[0-9]{1,15}$/.test(String(body.serverID)) ? Number(body.serverID) : 0;
  if (body.command !== undefined) out.command = String(body.command);
  if (body.trigger !== undefined) out.trigger = body.trigger as Trigger;
  if (body.requireOnline !== undefined) out.requireOnline = toBool(body.requireOnline);
  if (body.perUnit !== undefined) out.perUnit = toBool(body.perUnit);
  return out;
}

const tags = ['admin'];
/** The game plugin's routes, under their own tag. */
const pluginTags = ['delivery'];
const id = (p: { id: string }) => Number(p.id);

export function deliveryRoutes(app: FastifyInstance, delivery: DeliveryService, stream: StreamOptions): void {
  serverRoutes(app, delivery);
  commandRoutes(app, delivery);
  chargebackRoutes(app, delivery);
  pluginHttpRoutes(app, delivery);
  queueRoutes(app, delivery);
  claimRoutes(app, delivery);
  streamRoute(app, delivery, stream);
}

/** Admin: what runs on the game servers for a player whose payment is charged back. */
function chargebackRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/admin/delivery/chargeback-commands',
    {
      schema: {
        tags,
        summary: 'Commands queued for the player on each chargeback (a payment refunded or disputed at its gateway)',
        response: { 200: CommandList },
      },
    },
    async () => delivery.chargebackCommands(),
  );
  app.post(
    '/api/admin/delivery/chargeback-commands',
    {
      schema: {
        tags,
        summary: 'Add a chargeback command: `{username}` `{userID}` `{orderID}` `{chatUserID}` are filled in',
        body: ChargebackBody,
        response: { 201: CommandRow },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request, reply) => reply.code(201).send(await delivery.addChargebackCommand(Number(request.body.serverID), request.body.command)),
  );
  app.delete(
    '/api/admin/delivery/chargeback-commands/:id',
    {
      schema: { tags, summary: 'Delete a chargeback command', params: IdParams, response: { 200: Deleted }, errors: ['DELIVERY_COMMAND_NOT_FOUND'] },
    },
    async (request) => {
      await delivery.deleteChargebackCommand(id(request.params));
      return { status: true as const };
    },
  );
}

/** Admin: the game servers that receive commands, and their tokens. */
function serverRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/admin/delivery/servers',
    {
      schema: { tags, summary: 'Game servers that receive commands', response: { 200: ServerList } },
    },
    async () => delivery.listServers(),
  );
  app.post(
    '/api/admin/delivery/servers',
    {
      schema: { tags, summary: 'Add a game server; the answer holds its token, shown only here', body: CreateServerBody, response: { 201: ServerWithToken } },
    },
    async (request, reply) =>
      reply.code(201).send(await delivery.createServer({ name: request.body.name, isActive: optionalBool(request.body.isActive) ?? true })),
  );
  app.get(
    '/api/admin/delivery/servers/:id',
    {
      schema: { tags, summary: 'One game server', params: IdParams, response: { 200: ServerRow }, errors: ['DELIVERY_SERVER_NOT_FOUND'] },
    },
    async (request) => delivery.getServer(id(request.params)),
  );
  app.patch(
    '/api/admin/delivery/servers/:id',
    {
      schema: {
        tags,
        summary: 'Rename or (de)activate a game server',
        params: IdParams,
        body: UpdateServerBody,
        response: { 200: ServerRow },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => delivery.updateServer(id(request.params), { name: request.body.name, isActive: optionalBool(request.body.isActive) }),
  );
  app.delete(
    '/api/admin/delivery/servers/:id',
    {
      schema: {
        tags,
        summary: 'Delete a game server, its commands, and cancel what it has not fetched',
        params: IdParams,
        response: { 200: Deleted },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => {
      await delivery.deleteServer(id(request.params));
      return { status: true as const };
    },
  );
  app.post(
    '/api/admin/delivery/servers/:id/token',
    {
      schema: {
        tags,
        summary: "Replace a game server's token; the old one stops working",
        params: IdParams,
        response: { 200: ServerWithToken },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => delivery.rotateToken(id(request.params)),
  );
}

/** Admin: the commands a product runs on game servers. */
function commandRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/admin/store/products/:id/commands',
    {
      schema: { tags, summary: 'The commands a product runs on game servers', params: IdParams, response: { 200: CommandList }, errors: ['PRODUCT_NOT_FOUND'] },
    },
    async (request) => delivery.listCommands(id(request.params)),
  );
  app.post(
    '/api/admin/store/products/:id/commands',
    {
      schema: {
        tags,
        summary: 'Add a command to a product',
        params: IdParams,
        body: CreateCommandBody,
        response: { 201: CommandRow },
        errors: ['PRODUCT_NOT_FOUND', 'DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request, reply) =>
      reply.code(201).send(
        await delivery.createCommand(id(request.params), {
          requireOnline: false,
          perUnit: false,
          ...commandInput(request.body),
        } as CommandInput),
      ),
  );
  app.patch(
    '/api/admin/store/products/:id/commands/:commandId',
    {
      schema: {
        tags,
        summary: 'Change a product command',
        params: CommandParams,
        body: UpdateCommandBody,
        response: { 200: CommandRow },
        errors: ['DELIVERY_COMMAND_NOT_FOUND', 'DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => delivery.updateCommand(id(request.params), Number(request.params.commandId), commandInput(request.body)),
  );
  app.delete(
    '/api/admin/store/products/:id/commands/:commandId',
    {
      schema: { tags, summary: 'Delete a product command', params: CommandParams, response: { 200: Deleted }, errors: ['DELIVERY_COMMAND_NOT_FOUND'] },
    },
    async (request) => {
      await delivery.deleteCommand(id(request.params), Number(request.params.commandId));
      return { status: true as const };
    },
  );
}

/**
 * The official game plugin's HTTP connection mode, exactly as it calls (with the site's API key;
 * the server token says which server). It reads `error` into its enum (docs/clients.md).
 */
function pluginHttpRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/command-logs/:token/queue',
    {
      config: { clientErrors: gamePlugin(), plainJson: true },
      schema: {
        tags: pluginTags,
        summary: 'Commands waiting for this game server (plugin HTTP mode)',
        params: TokenParams,
        response: { 200: PluginQueue },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request, reply) => sendJsonText(reply, await delivery.pluginQueue(request.params.token)),
  );
  app.post(
    '/api/command-logs/validate',
    {
      config: { clientErrors: gamePlugin() },
      schema: {
        tags: pluginTags,
        summary: "Take listed commands: one player's still-waiting rows, marked done (plugin HTTP mode)",
        body: ValidateBody,
        response: { 200: Validated },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => ({ commands: await delivery.validate(request.body.token, (request.body.commands ?? []).map(Number)) }),
  );
}

/** Admin: the queue of commands, and a row sent again or cancelled. */
function queueRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/admin/delivery/queue',
    {
      schema: { tags, summary: 'Queued commands, newest first, filtered and paged', querystring: QueueQuery, response: { 200: QueueList } },
    },
    async (request) => {
      const q = request.query;
      const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
      return delivery.listQueue({
        serverId: num(q.server),
        status: q.status,
        userId: num(q.user),
        orderId: num(q.order),
        page: num(q.page) ?? 1,
        perPage: Math.min(num(q.perPage) ?? 50, 200),
      });
    },
  );
  app.post(
    '/api/admin/delivery/queue/:id/redeliver',
    {
      schema: {
        tags,
        summary: 'Queue a done, failed or cancelled command again',
        params: IdParams,
        response: { 200: QueueRow },
        errors: ['DELIVERY_QUEUE_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request) => delivery.redeliver(id(request.params)),
  );
  app.post(
    '/api/admin/delivery/queue/:id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel a waiting or claimed command',
        params: IdParams,
        response: { 200: QueueRow },
        errors: ['DELIVERY_QUEUE_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request) => delivery.cancel(id(request.params)),
  );
}

/** The claim/ack protocol: leases instead of hand-out-and-forget, and players' online state. */
function claimRoutes(fastify: FastifyInstance, delivery: DeliveryService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.post(
    '/api/delivery/claim',
    {
      schema: {
        tags: pluginTags,
        summary: 'Claim waiting commands under a lease',
        body: ClaimBody,
        response: { 200: Claimed },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request) => {
      const raw = request.body.limit ?? 20;
      const limit = /^[0-9]{1,3}$/.test(String(raw)) ? Number(raw) : 0;
      if (limit < 1 || limit > 100) throw new DomainError('VALIDATION_ERROR', 'limit must be a whole number from 1 to 100.');
      return { commands: await delivery.claim(request.body.token, limit, request.body.online ?? []) };
    },
  );
  app.post(
    '/api/delivery/ack',
    {
      schema: {
        tags: pluginTags,
        summary: 'Report claimed commands done or failed',
        body: AckBody,
        response: { 200: Acked, 409: AckNotSettled },
        errors: ['DELIVERY_SERVER_NOT_FOUND', 'DELIVERY_NOT_SETTLED'],
      },
    },
    async (request) => ({
      status: true as const,
      ids: await delivery.ack(request.body.token, request.body.ids.map(Number), request.body.result as 'done' | 'failed', request.body.message ?? ''),
    }),
  );
}

/** Server-Sent Events telling a game server when there may be work, its streams capped per server. */
function streamRoute(fastify: FastifyInstance, delivery: DeliveryService, stream: StreamOptions): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  // Each server's open streams, oldest first (a Set keeps insertion order).
  const open = new Map<number, Set<ServerResponse>>();
  app.get(
    '/api/delivery/stream',
    {
      schema: {
        tags: pluginTags,
        summary: 'Server-Sent Events: `work` when there may be commands to claim, comments as heartbeats',
        querystring: StreamQuery,
        produces: ['text/event-stream'],
        response: {
          200: Type.String({ description: 'a text/event-stream, ended after streamMaxSeconds, or when its game server opens more than ' + 'streamsPerServer' }),
        },
        errors: ['DELIVERY_SERVER_NOT_FOUND'],
      },
    },
    async (request, reply) => {
      const serverId = await delivery.serverOf(request.query.token);
      reply.hijack();
      // A stream is quiet between events on purpose: the server's idle timeout for sockets
      // (server.idleTimeoutMs) does not apply to it; the heartbeats keep proxies from closing it.
      request.raw.socket.setTimeout(0);
      const res = reply.raw;
      // no-transform and X-Accel-Buffering keep proxies from compressing or buffering the events.
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const write = (text: string) => {
        if (!res.writableEnded) res.write(text);
      };
      let pending = false;
      const work = () => {
        // Many buys in one tick make one event: the claimer takes what is there anyway.
        if (pending) return;
        pending = true;
        setImmediate(() => {
          pending = false;
          write('event: work\ndata: {}\n\n');
        });
      };
      // Work may have arrived while the plugin was away: it looks once at connect.
      write('retry: 2000\n\n');
      work();
      const stop = stream.wakeups.listen(serverId, work);
      const beat = setInterval(() => write(': heartbeat\n\n'), stream.heartbeatSeconds * 1000);
      const lifetime = setTimeout(() => endStream(res), stream.maxSeconds * 1000);
      let mine = open.get(serverId);
      if (!mine) open.set(serverId, (mine = new Set()));
      // Past the cap the oldest goes: a plugin reconnecting after a drop its old socket has not
      // noticed yet gets its stream, and one token cannot hold more than its share of connections.
      for (const oldest of mine) {
        if (mine.size < stream.perServer) break;
        mine.delete(oldest);
        endStream(oldest);
      }
      mine.add(res);
      res.on('close', () => {
        clearInterval(beat);
        clearTimeout(lifetime);
        stop();
        mine.delete(res);
        if (mine.size === 0 && open.get(serverId) === mine) open.delete(serverId);
      });
    },
  );
  // Open streams would keep the server from closing.
  app.addHook('preClose', async () => {
    for (const streams of open.values()) for (const res of streams) endStream(res);
  });
}

/** Ends a stream and its connection: the client reconnects after the `retry` it was sent. */
function endStream(res: ServerResponse): void {
  res.end();
  res.socket?.end();
}
