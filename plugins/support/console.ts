/**
 * The support desk in the staff console: the inbox by status and category, a ticket's thread,
 * a staff reply (typed, or a quick answer picked from the list: no script needed), and closing.
 * Support staff and admins both use it; admins also keep the ticket categories (a fresh install
 * has none, and a ticket needs one) and the quick answers.
 */
import { Type, type Static } from '@sinclair/typebox';
import { errorsFor, type ConsolePage, type ConsolePages, type ConsoleSection, idOf, recordPages, type ShownForm } from '../../core/console.ts';
import { counted } from '../../core/format.ts';
import { usersRef, type UsersService } from '../users/contract.ts';
import type { AnswerRow, CategoryRow, SupportService } from './contract.ts';
import { AnswerBody, CategoryBody } from './schemas.ts';

const STATUSES = [
  ['1', 'open'],
  ['2', 'answered'],
  ['3', 'awaiting staff (player replied)'],
  ['4', 'closed'],
] as const;
const statusName = (id: string) => STATUSES.find(([v]) => v === id)?.[1] ?? id;
const PAGE = 50;

const ReplyBody = Type.Object({
  message: Type.Optional(Type.String({ maxLength: 65_000 })),
  answerID: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
});

export const supportSection: ConsoleSection<unknown, SupportService> = {
  id: 'support',
  title: 'Support desk',
  order: 40,
  access: 'support',
  pages(pages, ctx, support) {
    const sp: SupportPages = { pages, support, users: ctx.services.get(usersRef) };
    dashboard(sp);
    adminLists(sp);
    inboxPage(sp);
    ticketRoutes(sp);
  },
};

/** What each group of pages works with. */
interface SupportPages {
  pages: ConsolePages;
  support: SupportService;
  users: UsersService;
}

/** What needs staff (tickets waiting for an answer) and the dashboard's count of tickets not closed. */
function dashboard({ pages, support }: SupportPages): void {
  pages.attention(async () => {
    const n = await support.awaitingAnswerCount();
    return [{ count: n, text: `${counted(n, 'ticket')} waiting for an answer`, href: pages.base }];
  });
  pages.dashboard(async () => [{ label: 'tickets not closed', value: String(await support.openTicketCount()), href: pages.base }]);
}

/** Links to the lists admins keep. */
const manage = (pages: ConsolePages) => ({
  kind: 'links' as const,
  items: [
    { label: 'Ticket categories', href: `${pages.base}/categories` },
    { label: 'Quick answers', href: `${pages.base}/answers` },
  ],
});

/** The lists admins keep: ticket categories and quick answers. */
function adminLists({ pages, support }: SupportPages): void {
  recordPages<CategoryRow>(pages, {
    path: '/categories',
    title: 'Ticket categories',
    noun: 'category',
    access: 'admin',
    above: [manage(pages)],
    fields: [{ name: 'name', label: 'Name', required: true, hint: 'Players choose it when they open a ticket.' }],
    createBody: CategoryBody,
    editBody: CategoryBody,
    list: () => support.listCategories({}),
    get: (id) => support.getCategory(id),
    create: ({ body }) => support.createCategory((body as Static<typeof CategoryBody>).name),
    update: (id, { body }) => support.updateCategory(id, body as Static<typeof CategoryBody>),
    remove: (id) => support.deleteCategory(id),
    idOf: (c) => Number(c.id),
    nameOf: (c) => c.name,
    values: (c) => ({ name: c.name }),
  });
  recordPages<AnswerRow>(pages, {
    path: '/answers',
    title: 'Quick answers',
    noun: 'quick answer',
    access: 'admin',
    above: [manage(pages)],
    fields: [
      { name: 'title', label: 'Title', required: true, hint: 'What staff pick from the list under a ticket.' },
      { name: 'content', label: 'Text', type: 'textarea', required: true, hint: 'Sent as the reply.' },
    ],
    columns: [{ key: 'content', label: 'Text' }],
    createBody: AnswerBody,
    editBody: AnswerBody,
    list: () => support.listAnswers({}),
    get: (id) => support.getAnswer(id),
    create: ({ body }) => support.createAnswer(body as Static<typeof AnswerBody>),
    update: (id, { body }) => support.updateAnswer(id, body as Static<typeof AnswerBody>),
    remove: (id) => support.deleteAnswer(id),
    idOf: (a) => Number(a.id),
    nameOf: (a) => a.title,
    values: (a) => ({ title: a.title, content: a.content }),
    cells: (a) => ({ content: a.content.length > 80 ? `${a.content.slice(0, 79)}…` : a.content }),
  });
}

/** The inbox: tickets by status, category or player, newest first, a page at a time. */
function inboxPage({ pages, support, users }: SupportPages): void {
  pages.get('', async ({ query, staff }) => {
    const status = STATUSES.some(([v]) => v === query.status) ? query.status : undefined;
    const categories = await support.listCategories({});
    const category = categories.some((c) => c.id === query.category) ? query.category : undefined;
    const before = idOf(query.before) || undefined;
    // One player's tickets, linked from their profile.
    const player = idOf(query.player) ? await users.findById(idOf(query.player)) : undefined;
    const tickets = await support.inbox({
      statusId: status ? Number(status) : undefined,
      categoryId: category ? Number(category) : undefined,
      accountId: player?.id,
      before,
      limit: PAGE,
    });
    const keep = { ...(status ? { status } : {}), ...(category ? { category } : {}), ...(player ? { player: String(player.id) } : {}) };
    const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams({ ...keep, ...extra })}`;
    return {
      title: 'Support desk',
      blocks: [
        ...(staff.access === 'admin' ? [manage(pages)] : []),
        {
          kind: 'form',
          id: 'ticket-filter',
          title: 'Inbox',
          method: 'get',
          action: pages.base,
          submit: 'Show tickets',
          values: { status: status ?? '', category: category ?? '', player: player ? String(player.id) : '' },
          fields: [
            ...(player ? [{ name: 'player', label: 'Player', type: 'hidden' as const }] : []),
            {
              name: 'status',
              label: 'Status',
              type: 'select',
              options: [{ value: '', label: 'any' }, ...STATUSES.map(([value, label]) => ({ value, label }))],
            },
            {
              name: 'category',
              label: 'Category',
              type: 'select',
              options: [{ value: '', label: 'any' }, ...categories.map((c) => ({ value: c.id, label: c.name }))],
            },
          ],
        },
        {
          kind: 'table',
          caption: player ? `Tickets of ${player.username}, newest first` : 'Tickets, newest first',
          empty: 'No ticket here.',
          columns: [
            { key: 'id', label: 'Ticket', numeric: true },
            { key: 'title', label: 'Title' },
            { key: 'category', label: 'Category' },
            { key: 'status', label: 'Status' },
            { key: 'updated', label: 'Updated' },
          ],
          rows: tickets.map((tk) => ({
            id: tk.id,
            title: { text: tk.title, href: `${pages.base}/tickets/${tk.id}` },
            category: tk.categoryName,
            status: statusName(tk.statusID),
            updated: tk.updateDate,
          })),
          next: tickets.length === PAGE ? link({ before: tickets.at(-1)!.id }) : undefined,
          first: before ? link({}) : undefined,
        },
      ],
    };
  });
}

/** A ticket's thread, with the forms to reply as staff and to close it. */
async function ticketPage({ pages, support, users }: SupportPages, id: number, reply?: ShownForm): Promise<ConsolePage> {
  const ticket = await support.getTicket(id);
  const authors = new Map<string, string>();
  for (const accountId of new Set([ticket.accountID, ...ticket.messages.map((m) => m.accountID)])) {
    authors.set(accountId, (await users.findById(Number(accountId)))?.username ?? `account ${accountId}`);
  }
  const answers = await support.listAnswers({});
  const player = pages.href('players', `/${ticket.accountID}`);
  const open = ticket.statusID !== '4';
  return {
    title: ticket.title,
    status: reply ? 422 : 200,
    blocks: [
      {
        kind: 'stats',
        items: [
          { label: 'status', value: statusName(ticket.statusID) },
          { label: 'category', value: ticket.category.name },
          { label: 'player', value: authors.get(ticket.accountID)!, ...(player ? { href: player } : {}) },
          { label: 'opened', value: ticket.creationDate },
        ],
      },
      {
        kind: 'thread',
        heading: 'Messages',
        messages: ticket.messages.map((m) => ({ author: authors.get(m.accountID)!, date: m.creationDate, text: m.message, staff: m.writeLocation === '2' })),
      },
      ...(open
        ? [
            {
              kind: 'form' as const,
              id: 'reply',
              title: 'Reply as staff',
              action: `${pages.base}/tickets/${ticket.id}/reply`,
              submit: 'Send reply',
              values: reply?.values ?? {},
              errors: reply?.errors,
              fields: [
                {
                  name: 'answerID',
                  label: 'Quick answer',
                  type: 'select' as const,
                  hint: 'Sent as the reply when the message below is empty, or after it.',
                  options: [{ value: '', label: 'none' }, ...answers.map((a) => ({ value: a.id, label: a.title }))],
                },
                { name: 'message', label: 'Message', type: 'textarea' as const },
              ],
            },
            {
              kind: 'form' as const,
              id: 'close',
              title: 'Close the ticket',
              action: `${pages.base}/tickets/${ticket.id}/close`,
              submit: 'Close ticket',
              fields: [],
              confirm: 'Close this ticket?',
            },
          ]
        : [{ kind: 'text' as const, text: 'This ticket is closed.' }]),
    ],
  };
}

/** A ticket shown, replied to and closed. */
function ticketRoutes(sp: SupportPages): void {
  const { pages, support } = sp;
  pages.get('/tickets/:id', async ({ params }) => ticketPage(sp, idOf(params.id)));

  pages.post(
    '/tickets/:id/reply',
    async ({ params, body, invalid, form, staff }) => {
      const id = idOf(params.id);
      if (invalid) return ticketPage(sp, id, { values: form, errors: invalid });
      const b = body as Static<typeof ReplyBody>;
      try {
        const answer = b.answerID === undefined ? undefined : await support.getAnswer(b.answerID);
        const message = [b.message?.trim(), answer?.content].filter(Boolean).join('\n\n');
        if (!message) return ticketPage(sp, id, { values: form, errors: { message: 'Write a message or pick a quick answer.' } });
        await support.postMessage(id, { author: { accountId: staff.userId }, message, isAdmin: true });
        return { redirect: `${pages.base}/tickets/${id}`, notice: 'Reply sent.' };
      } catch (err) {
        return ticketPage(sp, id, { values: form, errors: errorsFor(err, ['message', 'answerID'], { ANSWER_NOT_FOUND: 'answerID' }) });
      }
    },
    { body: ReplyBody },
  );

  pages.post('/tickets/:id/close', async ({ params }) => {
    const id = idOf(params.id);
    await support.closeTicket(id);
    return { redirect: `${pages.base}/tickets/${id}`, notice: `Ticket ${id} closed.` };
  });
}
