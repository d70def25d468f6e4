import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { sendJsonText } from '../../core/schema-compilers.ts';
import { idParam, ok, toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import { TicketSummaryRow, type Author, type SupportService } from './contract.ts';
import {
  AnswerBody,
  AnswerRow,
  CategoryBody,
  CategoryRow,
  IdAnswer,
  MessageQuery,
  NewMessageBody,
  NewTicketBody,
  Paging,
  TicketDetailRow,
  TicketListRow,
  TicketMessageRow,
  TicketQuery,
} from './schemas.ts';
import { TicketListAnswers } from './ticket-list.ts';

const IdParams = idParam();
const TicketParams = idParam('ticketId');
const MessageParams = Type.Object({ ...TicketParams.properties, ...IdParams.properties });
const IgnoredIdParams = Type.Object({ id: Type.String({ description: 'Ignored: any text (api.md creates tickets at this path)' }) });

/** The author fields of a body: `userID` is the chat bot's name for `accountID`; empty means absent. */
function authorOf(body: { accountID?: string; userID?: string; chatUserID?: string }): Author {
  const account = body.accountID || body.userID;
  return { accountId: account ? Number(account) : undefined, chatUserId: body.chatUserID || undefined };
}

const tags = ['support'];
const admin = ['admin'];
const deleted = { status: true as const };

export async function supportRoutes(app: FastifyInstance, support: SupportService, users: UsersService): Promise<void> {
  ticketRoutes(app, support, users);
  messageRoutes(app, support);
  categoryAndAnswerRoutes(app, support);
  adminRoutes(app, support);
}

/** Tickets: a user's, the list, one, opened and closed. */
function ticketRoutes(app: FastifyInstance, support: SupportService, users: UsersService): void {
  const r = app.withTypeProvider<TypeBoxProvider>();
  r.get(
    '/api/users/:userId/tickets',
    {
      schema: {
        tags,
        summary: "A user's tickets, newest first; `<userId>` may also be a username",
        params: UserRefParams,
        response: { 200: Type.Array(TicketSummaryRow) },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => support.ticketsOf((await users.requireByIdOrUsername(request.params.userId)).id),
  );

  const ticketList = new TicketListAnswers();
  r.get(
    '/api/support/tickets',
    {
      config: { plainJson: true },
      schema: {
        tags,
        summary: 'Tickets, newest first, with their category name and messages; optional filters and paging',
        querystring: TicketQuery,
        response: { 200: Type.Array(TicketListRow) },
      },
    },
    async ({ query: q }, reply) =>
      sendJsonText(
        reply,
        ticketList.answer(
          await support.listTickets({
            statusId: q.statusID,
            accountId: q.accountID,
            categoryId: q.categoryID,
            limit: q.limit,
            offset: q.offset,
          }),
        ),
      ),
  );

  r.get(
    '/api/support/tickets/:id',
    {
      schema: {
        tags,
        summary: 'One ticket with its category and messages',
        params: IdParams,
        response: { 200: TicketDetailRow },
        errors: ['TICKET_NOT_FOUND'],
      },
    },
    async ({ params }) => support.getTicket(Number(params.id)),
  );

  // api.md creates at `/tickets/<id>`, whatever the id says; decisions.md §7 adds the bare path.
  // The parameter keeps the name of the GET beside it, so the two share one documented path.
  const create = {
    schema: {
      tags,
      summary: 'Open a ticket with its first message',
      body: NewTicketBody,
      response: { 200: IdAnswer },
      errors: ['USER_NOT_FOUND', 'CATEGORY_NOT_FOUND'],
    },
  } as const;
  const createHandler = async ({ body }: { body: NewTicketBody }) => {
    const id = await support.createTicket({
      author: authorOf(body),
      categoryId: Number(body.categoryID),
      title: body.title,
      message: body.message,
      statusId: body.statusID,
    });
    return { success: true as const, data: { id: String(id) } };
  };
  r.post('/api/support/tickets', create, createHandler);
  r.post('/api/support/tickets/:id', { schema: { ...create.schema, params: IgnoredIdParams } }, createHandler);

  r.post(
    '/api/support/tickets/:id/close',
    {
      schema: {
        tags,
        summary: 'Close a ticket (closing a closed ticket is a no-op)',
        params: IdParams,
        response: { 200: IdAnswer },
        errors: ['TICKET_NOT_FOUND'],
      },
    },
    async ({ params }) => {
      const id = Number(params.id);
      await support.closeTicket(id);
      return { success: true as const, data: { id: String(id) } };
    },
  );
}

/** A ticket's messages: listed, one, and a reply. */
function messageRoutes(app: FastifyInstance, support: SupportService): void {
  const r = app.withTypeProvider<TypeBoxProvider>();
  r.get(
    '/api/support/tickets/:ticketId/messages',
    {
      schema: {
        tags,
        summary: "A ticket's messages, oldest first; optional accountID filter and paging",
        params: TicketParams,
        querystring: MessageQuery,
        response: { 200: Type.Array(TicketMessageRow) },
        errors: ['TICKET_NOT_FOUND'],
      },
    },
    async ({ params, query: q }) => support.listMessages(Number(params.ticketId), { accountId: q.accountID, limit: q.limit, offset: q.offset }),
  );

  r.get(
    '/api/support/tickets/:ticketId/messages/:id',
    {
      schema: {
        tags,
        summary: 'One message of a ticket',
        params: MessageParams,
        response: { 200: TicketMessageRow },
        errors: ['TICKET_NOT_FOUND', 'MESSAGE_NOT_FOUND'],
      },
    },
    async ({ params }) => support.getMessage(Number(params.ticketId), Number(params.id)),
  );

  r.post(
    '/api/support/tickets/:ticketId/messages',
    {
      schema: {
        tags,
        summary: 'Reply to a ticket: isAdmin=true answers as staff (status 2), otherwise the player replies (status 3)',
        params: TicketParams,
        body: NewMessageBody,
        response: { 200: IdAnswer },
        errors: ['TICKET_NOT_FOUND', 'TICKET_CLOSED', 'USER_NOT_FOUND'],
      },
    },
    async ({ params, body }) => {
      const id = await support.postMessage(Number(params.ticketId), { author: authorOf(body), message: body.message, isAdmin: toBool(body.isAdmin) });
      return { success: true as const, data: { id: String(id) } };
    },
  );
}

/** Support categories and quick answers as players and bots read them. */
function categoryAndAnswerRoutes(app: FastifyInstance, support: SupportService): void {
  const r = app.withTypeProvider<TypeBoxProvider>();
  r.get(
    '/api/support/categories',
    {
      schema: { tags, summary: 'Support categories', querystring: Paging, response: { 200: Type.Array(CategoryRow) } },
    },
    async ({ query }) => support.listCategories(query),
  );

  r.get(
    '/api/support/categories/:id',
    {
      schema: {
        tags,
        summary: 'One support category, as an array of one (api.md)',
        params: IdParams,
        response: { 200: Type.Array(CategoryRow) },
        errors: ['CATEGORY_NOT_FOUND'],
      },
    },
    async ({ params }) => [await support.getCategory(Number(params.id))],
  );

  // Quick answers: api.md lists them under the store's path and reads one under support's.
  for (const base of ['/api/store/answers', '/api/support/answers']) {
    r.get(
      base,
      {
        schema: { tags, summary: 'Quick answers', querystring: Paging, response: { 200: Type.Array(AnswerRow) } },
      },
      async ({ query }) => support.listAnswers(query),
    );
    r.get(
      `${base}/:id`,
      {
        schema: { tags, summary: 'One quick answer', params: IdParams, response: { 200: AnswerRow }, errors: ['ANSWER_NOT_FOUND'] },
      },
      async ({ params }) => support.getAnswer(Number(params.id)),
    );
  }
}

/** Admin (decisions.md §8): support categories and quick answers kept. */
function adminRoutes(app: FastifyInstance, support: SupportService): void {
  const r = app.withTypeProvider<TypeBoxProvider>();
  r.get(
    '/api/admin/support/categories',
    {
      schema: { tags: admin, summary: 'List support categories', querystring: Paging, response: { 200: Type.Array(CategoryRow) } },
    },
    async ({ query }) => support.listCategories(query),
  );
  r.post(
    '/api/admin/support/categories',
    {
      schema: { tags: admin, summary: 'Create a support category', body: CategoryBody, response: { 201: CategoryRow } },
    },
    async ({ body }, reply) => reply.code(201).send(await support.createCategory(body.name)),
  );
  r.get(
    '/api/admin/support/categories/:id',
    {
      schema: { tags: admin, summary: 'Get a support category', params: IdParams, response: { 200: CategoryRow }, errors: ['CATEGORY_NOT_FOUND'] },
    },
    async ({ params }) => support.getCategory(Number(params.id)),
  );
  r.patch(
    '/api/admin/support/categories/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change a support category',
        params: IdParams,
        body: Type.Partial(CategoryBody),
        response: { 200: CategoryRow },
        errors: ['CATEGORY_NOT_FOUND'],
      },
    },
    async ({ params, body }) => support.updateCategory(Number(params.id), body),
  );
  r.delete(
    '/api/admin/support/categories/:id',
    {
      schema: { tags: admin, summary: 'Delete a support category', params: IdParams, response: { 200: ok() }, errors: ['CATEGORY_NOT_FOUND', 'CONFLICT'] },
    },
    async ({ params }) => {
      await support.deleteCategory(Number(params.id));
      return deleted;
    },
  );

  r.get(
    '/api/admin/support/answers',
    {
      schema: { tags: admin, summary: 'List quick answers', querystring: Paging, response: { 200: Type.Array(AnswerRow) } },
    },
    async ({ query }) => support.listAnswers(query),
  );
  r.post(
    '/api/admin/support/answers',
    {
      schema: { tags: admin, summary: 'Create a quick answer', body: AnswerBody, response: { 201: AnswerRow } },
    },
    async ({ body }, reply) => reply.code(201).send(await support.createAnswer(body)),
  );
  r.get(
    '/api/admin/support/answers/:id',
    {
      schema: { tags: admin, summary: 'Get a quick answer', params: IdParams, response: { 200: AnswerRow }, errors: ['ANSWER_NOT_FOUND'] },
    },
    async ({ params }) => support.getAnswer(Number(params.id)),
  );
  r.patch(
    '/api/admin/support/answers/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change a quick answer',
        params: IdParams,
        body: Type.Partial(AnswerBody),
        response: { 200: AnswerRow },
        errors: ['ANSWER_NOT_FOUND'],
      },
    },
    async ({ params, body }) => support.updateAnswer(Number(params.id), body),
  );
  r.delete(
    '/api/admin/support/answers/:id',
    {
      schema: { tags: admin, summary: 'Delete a quick answer', params: IdParams, response: { 200: ok() }, errors: ['ANSWER_NOT_FOUND'] },
    },
    async ({ params }) => {
      await support.deleteAnswer(Number(params.id));
      return deleted;
    },
  );
}
