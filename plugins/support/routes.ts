import type { FastifyInstance } from 'fastify';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { idParam, ok, toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import { TicketSummaryRow } from './contract.ts';
import type { Author, Catalogue, DbSupportService } from './service.ts';
import {
  AnswerBody, AnswerRow, CategoryBody, CategoryRow, IdAnswer, MessageQuery, NewMessageBody, NewTicketBody, Paging,
  TicketDetailRow, TicketListRow, TicketMessageRow, TicketQuery,
} from './schemas.ts';

const IdParams = idParam();
const TicketParams = idParam('ticketId');
const MessageParams = Type.Object({ ...TicketParams.properties, ...IdParams.properties });
const IgnoredIdParams = Type.Object({ id: Type.String({ description: 'Ignored: any text (api.md creates tickets at this path)' }) });

/** The author fields of a body: `userID` is the chat bot's name for `accountID`; empty means absent. */
function authorOf(body: { accountID?: string; userID?: string; chatUserID?: string }): Author {
  const account = body.accountID || body.userID;
  return { accountId: account ? Number(account) : undefined, chatUserId: body.chatUserID || undefined };
}

export async function supportRoutes(app: FastifyInstance, support: DbSupportService, users: UsersService): Promise<void> {
  const r = app.withTypeProvider<TypeBoxProvider>();
  const tags = ['support'];

  r.get('/api/users/:userId/tickets', {
    schema: {
      tags, summary: 'A user\'s tickets, newest first; `<userId>` may also be a username', params: UserRefParams,
      response: { 200: Type.Array(TicketSummaryRow) }, errors: ['USER_NOT_FOUND'],
    },
  }, async (request) => support.ticketsOf((await users.requireByIdOrUsername(request.params.userId)).id));

  r.get('/api/support/tickets', {
    schema: {
      tags, summary: 'Tickets, newest first, with their category name and messages; optional filters and paging',
      querystring: TicketQuery, response: { 200: Type.Array(TicketListRow) },
    },
  }, async ({ query: q }) => support.listTickets({
    statusId: q.statusID, accountId: q.accountID, categoryId: q.categoryID, limit: q.limit, offset: q.offset,
  }));

  r.get('/api/support/tickets/:id', {
    schema: { tags, summary: 'One ticket with its category and messages', params: IdParams, response: { 200: TicketDetailRow }, errors: ['TICKET_NOT_FOUND'] },
  }, async ({ params }) => support.getTicket(Number(params.id)));

  // api.md creates at `/tickets/<id>`, whatever the id says; decisions.md §7 adds the bare path.
  // The parameter keeps the name of the GET beside it, so the two share one documented path.
  const create = {
    schema: { tags, summary: 'Open a ticket with its first message', body: NewTicketBody, response: { 200: IdAnswer }, errors: ['USER_NOT_FOUND', 'CATEGORY_NOT_FOUND'] },
  } as const;
  const createHandler = async ({ body }: { body: NewTicketBody }) => {
    const id = await support.createTicket({
      author: authorOf(body), categoryId: Number(body.categoryID), title: body.title, message: body.message, statusId: body.statusID,
    });
    return { success: true as const, data: { id: String(id) } };
  };
  r.post('/api/support/tickets', create, createHandler);
  r.post('/api/support/tickets/:id', { schema: { ...create.schema, params: IgnoredIdParams } }, createHandler);

  r.post('/api/support/tickets/:id/close', {
    schema: { tags, summary: 'Close a ticket (closing a closed ticket is a no-op)', params: IdParams, response: { 200: IdAnswer }, errors: ['TICKET_NOT_FOUND'] },
  }, async ({ params }) => {
    const id = Number(params.id);
    await support.closeTicket(id);
    return { success: true as const, data: { id: String(id) } };
  });

  r.get('/api/support/tickets/:ticketId/messages', {
    schema: {
      tags, summary: "A ticket's messages, oldest first; optional accountID filter and paging",
      params: TicketParams, querystring: MessageQuery, response: { 200: Type.Array(TicketMessageRow) }, errors: ['TICKET_NOT_FOUND'],
    },
  }, async ({ params, query: q }) => support.listMessages(Number(params.ticketId), { accountId: q.accountID, limit: q.limit, offset: q.offset }));

  r.get('/api/support/tickets/:ticketId/messages/:id', {
    schema: { tags, summary: 'One message of a ticket', params: MessageParams, response: { 200: TicketMessageRow }, errors: ['TICKET_NOT_FOUND', 'MESSAGE_NOT_FOUND'] },
  }, async ({ params }) => support.getMessage(Number(params.ticketId), Number(params.id)));

  r.post('/api/support/tickets/:ticketId/messages', {
    schema: {
      tags, summary: 'Reply to a ticket: isAdmin=true answers as staff (status 2), otherwise the player replies (status 3)',
      params: TicketParams, body: NewMessageBody, response: { 200: IdAnswer }, errors: ['TICKET_NOT_FOUND', 'TICKET_CLOSED', 'USER_NOT_FOUND'],
    },
  }, async ({ params, body }) => {
    const id = await support.postMessage(Number(params.ticketId), { author: authorOf(body), message: body.message, isAdmin: toBool(body.isAdmin) });
    return { success: true as const, data: { id: String(id) } };
  });

  r.get('/api/support/categories', {
    schema: { tags, summary: 'Support categories', querystring: Paging, response: { 200: Type.Array(CategoryRow) } },
  }, async ({ query }) => support.categories.list(query));

  r.get('/api/support/categories/:id', {
    schema: { tags, summary: 'One support category, as an array of one (api.md)', params: IdParams, response: { 200: Type.Array(CategoryRow) }, errors: ['CATEGORY_NOT_FOUND'] },
  }, async ({ params }) => [await support.categories.get(Number(params.id))]);

  // Quick answers: api.md lists them under the store's path and reads one under support's.
  for (const base of ['/api/store/answers', '/api/support/answers']) {
    r.get(base, {
      schema: { tags, summary: 'Quick answers', querystring: Paging, response: { 200: Type.Array(AnswerRow) } },
    }, async ({ query }) => support.answers.list(query));
    r.get(`${base}/:id`, {
      schema: { tags, summary: 'One quick answer', params: IdParams, response: { 200: AnswerRow }, errors: ['ANSWER_NOT_FOUND'] },
    }, async ({ params }) => support.answers.get(Number(params.id)));
  }

  adminCatalogue(app, '/api/admin/support/categories', 'support category', support.categories, CategoryBody, CategoryRow, { notFound: 'CATEGORY_NOT_FOUND', inUse: true });
  adminCatalogue(app, '/api/admin/support/answers', 'quick answer', support.answers, AnswerBody, AnswerRow, { notFound: 'ANSWER_NOT_FOUND', inUse: false });
}

/**
 * The REST routes of decisions.md §8 for one catalogue table. `codes` are for the document: the
 * catalogue's not-found code, and whether a delete can be refused while other rows use the row.
 */
function adminCatalogue<F extends string>(
  app: FastifyInstance, path: string, noun: string, catalogue: Catalogue<F>, body: TObject, rowSchema: TObject,
  codes: { notFound: string; inUse: boolean },
): void {
  const tags = ['admin'];
  const found = [codes.notFound];
  type ById = { Params: Static<typeof IdParams> };
  // Fastify cannot resolve its body type over a generic key set, hence the two casts below.

  app.get<{ Querystring: Paging }>(path, {
    schema: { tags, summary: `List ${noun}s`, querystring: Paging, response: { 200: Type.Array(rowSchema) } },
  }, async ({ query }) => catalogue.list(query));
  app.post<{ Body: Record<F, string> }>(path, {
    schema: { tags, summary: `Create a ${noun}`, body, response: { 201: rowSchema } },
  }, async (request, reply) => reply.code(201).send(await catalogue.create(request.body as Record<F, string>)));
  app.get<ById>(`${path}/:id`, {
    schema: { tags, summary: `Get a ${noun}`, params: IdParams, response: { 200: rowSchema }, errors: found },
  }, async ({ params }) => catalogue.get(Number(params.id)));
  app.patch<ById & { Body: Partial<Record<F, string>> }>(`${path}/:id`, {
    schema: { tags, summary: `Change a ${noun}`, params: IdParams, body: Type.Partial(body), response: { 200: rowSchema }, errors: found },
  }, async ({ params, body: patch }) => catalogue.update(Number(params.id), patch as Partial<Record<F, string>>));
  app.delete<ById>(`${path}/:id`, {
    schema: { tags, summary: `Delete a ${noun}`, params: IdParams, response: { 200: ok() }, errors: codes.inUse ? [...found, 'CONFLICT'] : found },
  }, async ({ params }) => {
    await catalogue.remove(Number(params.id));
    return { status: true as const };
  });
}
