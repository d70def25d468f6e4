import type { AuditLog } from '../../core/audit.ts';
import { countParam, NO_LIMIT, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { displayTimestamp, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, empty, fields, raw, sql, where, type Sql } from '../../core/sql.ts';
import { joined, type TableRecord } from '../../core/table.ts';
import type { UsersService } from '../users/contract.ts';
import type {
  AnswerInput,
  AnswerRow,
  Author,
  CategoryRow,
  MessageFilter,
  MessageRow,
  NewMessage,
  NewTicket,
  Page,
  SupportService,
  TicketDetailRow,
  TicketFilter,
  TicketListRow,
  TicketMessageRow,
  TicketSummaryRow,
} from './contract.ts';
import { SupportAnswer, SupportCategory, SupportMessage, SupportTicket } from './entities.ts';

/** decisions.md §7. */
const Status = { OPEN: 1, ANSWERED: 2, USER_REPLY: 3, CLOSED: 4 } as const;
const WRITTEN_BY_USER = 1;
const WRITTEN_BY_STAFF = 2;

const T = SupportTicket.c;
const M = SupportMessage.c;
const K = SupportCategory.c;
const t = SupportTicket.as('t');
const c = SupportCategory.as('c');
/** A ticket with its category's name (empty when the category is gone). */
const TICKET = joined({ ticket: t, categoryName: sql`coalesce(${c.c.name}, '')` });
const TICKET_SELECT = sql`select ${TICKET.columns} from ${t} left join ${c} on ${c.c.id} = ${t.c.categoryId}`;
/**
 * A message's columns in the order `#message` reads them, its ticket's id last: read as arrays straight
 * into the answer's rows, with no record between, since a list holds thousands (docs/performance.md).
 */
const MESSAGE_SELECT = sql`select ${M.id}, ${M.accountId}, ${M.message}, ${M.writeLocation}, ${M.creationDate}, ${M.ticketId} from ${SupportMessage}`;
const ticketOf = (message: unknown[]) => Number(message[5]);

/** Ids bound per statement: far below the placeholder limits of both databases (SQLite 32,766, MySQL 65,535). */
const IDS_PER_STATEMENT = 1024;

/**
 * `ids` padded to a power of two (the last id repeated), for an `in` list: lists of any length
 * then share a dozen statement texts instead of each length preparing and caching its own.
 */
function padded(ids: number[]): number[] {
  let size = 1;
  while (size < ids.length) size *= 2;
  return [...ids, ...Array<number>(size - ids.length).fill(ids.at(-1)!)];
}

function isId(id: number): boolean {
  return Number.isSafeInteger(id) && id > 0;
}

/** ` limit ? offset ?` for optional paging, its values bound; an offset alone reads every row past it. */
function pageClause(page: Page): Sql {
  const { limit, offset = 0 } = page;
  if (limit === undefined && offset === 0) return empty;
  for (const [name, value, min] of [
    ['limit', limit ?? 1, 1],
    ['offset', offset, 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min) throw new DomainError('VALIDATION_ERROR', `${name} must be an integer of at least ${min}`);
  }
  return sql` limit ${limit === undefined ? NO_LIMIT : countParam(limit)} offset ${countParam(offset)}`;
}

/** Inside a transaction, until commit: keeps others from changing or deleting the row. */
type Lock = 'update';

function categoryRow({ id, name }: TableRecord<typeof SupportCategory>): CategoryRow {
  return { id: String(id), name };
}

function answerRow({ id, title, content }: TableRecord<typeof SupportAnswer>): AnswerRow {
  return { id: String(id), title, content };
}

export class DbSupportService implements SupportService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #users: UsersService;
  readonly #settings: SettingsService;
  readonly #audit: AuditLog;

  constructor(db: Database, events: EventBus, users: UsersService, settings: SettingsService, audit: AuditLog) {
    this.#db = db;
    this.#events = events;
    this.#users = users;
    this.#settings = settings;
    this.#audit = audit;
  }

  /** A staff change's audit entry, in its transaction (`what`: `category`, `answer`, `message`, `ticket`). */
  #record(what: string, verb: string, id: number | string, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `support.${what}.${verb}`, target: { type: what, id }, summary, before, after });
  }

  /** Stored UTC timestamps as clients see them; the zone is read once per call. */
  #clock(): (ts: string) => string {
    const zone = this.#settings.get().timezone;
    return (ts) => displayTimestamp(ts, zone);
  }

  /** A row of TICKET_SELECT as clients see it. */
  #summary(row: unknown[], show: (ts: string) => string): TicketSummaryRow {
    const { ticket: t, categoryName } = TICKET.read(row);
    return {
      id: String(t.id),
      accountID: String(t.accountId),
      categoryID: String(t.categoryId),
      title: t.title,
      statusID: String(t.statusId),
      readStatus: String(t.readStatus),
      updateDate: show(t.updateDate),
      creationDate: show(t.creationDate),
      categoryName: String(categoryName),
    };
  }

  /** A row of MESSAGE_SELECT as clients see it. */
  #message([id, accountId, message, writeLocation, creationDate]: unknown[], show: (ts: string) => string): MessageRow {
    return {
      id: String(id),
      accountID: String(accountId),
      message: String(message),
      writeLocation: String(writeLocation),
      creationDate: show(String(creationDate)),
    };
  }

  /** The same with its ticket's id, as the messages endpoints give it. */
  #ticketMessage(row: unknown[], show: (ts: string) => string): TicketMessageRow {
    return { ...this.#message(row, show), supportID: String(ticketOf(row)) };
  }

  async #tickets(filter: TicketFilter): Promise<unknown[][]> {
    const { statusId, accountId, categoryId } = filter;
    return this.#db.queryArrays(
      sql`${TICKET_SELECT} ${where(
        statusId !== undefined && sql`${t.c.statusId} = ${statusId}`,
        accountId !== undefined && sql`${t.c.accountId} = ${accountId}`,
        categoryId !== undefined && sql`${t.c.categoryId} = ${categoryId}`,
      )} order by ${t.c.id} desc${pageClause(filter)}`,
    );
  }

  /**
   * The staff inbox: tickets newest first without their messages, `limit` at most, older than the
   * ticket `before` (keyset paging).
   */
  async inbox(filter: { statusId?: number; categoryId?: number; accountId?: number; before?: number; limit: number }): Promise<TicketSummaryRow[]> {
    const show = this.#clock();
    const { statusId, categoryId, accountId, before } = filter;
    const rows = await this.#db.queryArrays(
      sql`${TICKET_SELECT} ${where(
        statusId !== undefined && sql`${t.c.statusId} = ${statusId}`,
        categoryId !== undefined && sql`${t.c.categoryId} = ${categoryId}`,
        accountId !== undefined && sql`${t.c.accountId} = ${accountId}`,
        before !== undefined && sql`${t.c.id} < ${before}`,
      )} order by ${t.c.id} desc limit ${countParam(filter.limit)}`,
    );
    return rows.map((r) => this.#summary(r, show));
  }

  /** Tickets not closed. */
  async awaitingAnswerCount(): Promise<number> {
    const [row] = await this.#db.query(
      sql`select ${fields({ n: count() })} from ${SupportTicket} where ${SupportTicket.c.statusId} in ${[Status.OPEN, Status.USER_REPLY]}`,
    );
    return Number(row!.n);
  }

  async openTicketCount(): Promise<number> {
    const [row] = await this.#db.query(sql`select ${fields({ n: count() })} from ${SupportTicket} where ${T.statusId} <> ${Status.CLOSED}`);
    return Number(row!.n);
  }

  async ticketsOf(userId: number): Promise<TicketSummaryRow[]> {
    const show = this.#clock();
    return (await this.#tickets({ accountId: userId })).map((r) => this.#summary(r, show));
  }

  /**
   * Newest first, each with its messages: two queries, whatever the number of messages (and, when
   * filtered, of tickets up to IDS_PER_STATEMENT; a longer one takes one more query per as many).
   * The messages are fetched by what the first query found (its ids; unfiltered, its first and last),
   * not by repeating its filter, so a ticket opened or changed in between cannot make a listed ticket
   * miss its messages.
   */
  async listTickets(filter: TicketFilter): Promise<TicketListRow[]> {
    const show = this.#clock();
    const tickets = await this.#tickets(filter);
    if (tickets.length === 0) return [];
    const byTicket = new Map<number, MessageRow[]>();
    const list = tickets.map((row) => {
      const messages: MessageRow[] = [];
      const ticket = { ...this.#summary(row, show), messages };
      byTicket.set(Number(ticket.id), messages);
      return ticket;
    });
    const ids = [...byTicket.keys()];
    const unfiltered = filter.statusId === undefined && filter.accountId === undefined && filter.categoryId === undefined;
    const paged = filter.limit !== undefined || (filter.offset ?? 0) > 0;
    // Unfiltered, a page is every ticket from its last id to its first, so two bounds find its messages (an id each
    // had MariaDB match every row against hundreds); unpaged it is every ticket, so no bound is needed
    // (docs/performance.md). A ticket opened since has no entry; its rows are skipped.
    const clauses = unfiltered
      ? [where(paged && sql`${M.ticketId} between ${ids.at(-1)!} and ${ids[0]!}`)]
      : Array.from(
          { length: Math.ceil(ids.length / IDS_PER_STATEMENT) },
          (_, i) => sql`where ${M.ticketId} in ${padded(ids.slice(i * IDS_PER_STATEMENT, (i + 1) * IDS_PER_STATEMENT))}`,
        );
    for (const clause of clauses) {
      for (const row of await this.#db.queryArrays(sql`${MESSAGE_SELECT} ${clause} order by ${M.id}`))
        byTicket.get(ticketOf(row))?.push(this.#message(row, show));
    }
    return list;
  }

  /** The ticket's row of TICKET_SELECT, or TICKET_NOT_FOUND. */
  async #requireTicket(id: number): Promise<unknown[]> {
    const [row] = isId(id) ? await this.#db.queryArrays(sql`${TICKET_SELECT} where ${t.c.id} = ${id}`) : [];
    if (!row) throw new DomainError('TICKET_NOT_FOUND', `No ticket with ID ${id}.`);
    return row;
  }

  /**
   * The ticket's status, or TICKET_NOT_FOUND. Writers lock the row until commit so that a close
   * and a reply racing each other cannot both win (only this row: the join of the ticket query
   * would lock its category too).
   */
  async #ticketStatus(id: number, lock = false): Promise<number> {
    const [row] = isId(id)
      ? await this.#db.query(sql`select ${fields({ status_id: T.statusId })} from ${SupportTicket} where ${T.id} = ${id}${raw(lock ? this.#db.forUpdate : '')}`)
      : [];
    if (!row) throw new DomainError('TICKET_NOT_FOUND', `No ticket with ID ${id}.`);
    return Number(row.status_id);
  }

  async getTicket(id: number): Promise<TicketDetailRow> {
    const show = this.#clock();
    const ticket = await this.#requireTicket(id);
    const messages = await this.#db.queryArrays(sql`${MESSAGE_SELECT} where ${M.ticketId} = ${id} order by ${M.id}`);
    const { categoryName, ...summary } = this.#summary(ticket, show);
    return { ...summary, category: { id: summary.categoryID, name: categoryName }, messages: messages.map((m) => this.#message(m, show)) };
  }

  async #authorId(author: Author): Promise<number> {
    if (author.accountId !== undefined) return (await this.#users.requireById(author.accountId)).id;
    if (author.chatUserId !== undefined) {
      const user = await this.#users.findByLinkedAccount('chat', author.chatUserId);
      if (!user) throw new DomainError('USER_NOT_FOUND', `No user is linked to chat user ID ${author.chatUserId}.`);
      return user.id;
    }
    throw new DomainError('VALIDATION_ERROR', 'accountID is required (or userID, or chatUserID)');
  }

  /** Opens a ticket with its first message, written by the player. */
  async createTicket(input: NewTicket): Promise<number> {
    return this.#db.transaction(async () => {
      const accountId = await this.#authorId(input.author);
      // A write, not a lock: a delete of the category writes the same row, and on Galera a lock
      // holds on its own node only while two writes of one row meet in certification.
      const { affectedRows } = await this.#db.run(sql`update ${SupportCategory} set ${K.tickets} = ${K.tickets} + 1 where ${K.id} = ${input.categoryId}`);
      if (affectedRows === 0) throw new DomainError('CATEGORY_NOT_FOUND', `No support category with ID ${input.categoryId}.`);
      const at = now();
      const ticketId = await SupportTicket.insert(this.#db, {
        accountId,
        categoryId: input.categoryId,
        title: input.title,
        statusId: input.statusId ?? Status.OPEN,
        readStatus: 1,
        updateDate: at,
        creationDate: at,
      });
      await SupportMessage.insert(this.#db, { ticketId, accountId, message: input.message, writeLocation: WRITTEN_BY_USER, creationDate: at });
      await this.#events.emit('support.ticket.created', { ticketId, accountId, title: input.title });
      return ticketId;
    });
  }

  /** Closing a closed ticket changes nothing and is not an error. */
  async closeTicket(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const statusId = await this.#ticketStatus(id, true);
      if (statusId === Status.CLOSED) return;
      await SupportTicket.update(this.#db, id, { statusId: Status.CLOSED, updateDate: now() });
      await this.#record('ticket', 'close', id, `Closed ticket ${id}`, { statusId }, { statusId: Status.CLOSED });
      await this.#events.emit('support.ticket.closed', { ticketId: id });
    });
  }

  async listMessages(ticketId: number, filter: MessageFilter): Promise<TicketMessageRow[]> {
    const show = this.#clock();
    await this.#ticketStatus(ticketId);
    const { accountId } = filter;
    const messages = await this.#db.queryArrays(
      sql`${MESSAGE_SELECT} ${where(sql`${M.ticketId} = ${ticketId}`, accountId !== undefined && sql`${M.accountId} = ${accountId}`)} order by ${M.id}${pageClause(filter)}`,
    );
    return messages.map((row) => this.#ticketMessage(row, show));
  }

  /** Message ids are global; one that belongs to another ticket is not found here. */
  async getMessage(ticketId: number, id: number): Promise<TicketMessageRow> {
    await this.#ticketStatus(ticketId);
    const [message] = isId(id) ? await this.#db.queryArrays(sql`${MESSAGE_SELECT} where ${M.id} = ${id} and ${M.ticketId} = ${ticketId}`) : [];
    if (!message) throw new DomainError('MESSAGE_NOT_FOUND', `Ticket ${ticketId} has no message with ID ${id}.`);
    return this.#ticketMessage(message, this.#clock());
  }

  /** A staff message answers the ticket, a player's reopens it as User-Reply (decisions.md §7). */
  async postMessage(ticketId: number, input: NewMessage): Promise<number> {
    return this.#db.transaction(async () => {
      if ((await this.#ticketStatus(ticketId, true)) === Status.CLOSED) throw new DomainError('TICKET_CLOSED', `Ticket ${ticketId} is closed.`);
      const accountId = await this.#authorId(input.author);
      const at = now();
      const messageId = await SupportMessage.insert(this.#db, {
        ticketId,
        accountId,
        message: input.message,
        writeLocation: input.isAdmin ? WRITTEN_BY_STAFF : WRITTEN_BY_USER,
        creationDate: at,
      });
      await SupportTicket.update(this.#db, ticketId, {
        statusId: input.isAdmin ? Status.ANSWERED : Status.USER_REPLY,
        readStatus: input.isAdmin ? 0 : 1,
        updateDate: at,
      });
      await this.#events.emit('support.ticket.replied', { ticketId, messageId, accountId, isAdmin: input.isAdmin });
      if (input.isAdmin) await this.#record('message', 'reply', messageId, `Answered ticket ${ticketId}`, undefined, { ticketId, message: input.message });
      return messageId;
    });
  }

  // ---- support categories

  async listCategories(page: Page): Promise<CategoryRow[]> {
    return (await SupportCategory.select(this.#db, sql`order by ${SupportCategory.c.id}${pageClause(page)}`)).map(categoryRow);
  }

  async #category(id: number, lock?: Lock): Promise<CategoryRow> {
    const category = await SupportCategory.find(this.#db, id, lock);
    if (!category) throw new DomainError('CATEGORY_NOT_FOUND', `No support category with ID ${id}.`);
    return categoryRow(category);
  }

  getCategory(id: number): Promise<CategoryRow> {
    return this.#category(id);
  }

  async createCategory(name: string): Promise<CategoryRow> {
    return this.#db.transaction(async () => {
      const id = await SupportCategory.insert(this.#db, { name });
      await this.#record('category', 'create', id, `Created ticket category ${name}`, undefined, { id, name });
      return { id: String(id), name };
    });
  }

  async updateCategory(id: number, patch: { name?: string }): Promise<CategoryRow> {
    return this.#db.transaction(async () => {
      const current = await this.#category(id, 'update');
      await SupportCategory.update(this.#db, id, { name: patch.name });
      const after = { ...current, name: patch.name ?? current.name };
      await this.#record('category', 'update', id, `Renamed ticket category ${current.name} to ${after.name}`, current, after);
      return after;
    });
  }

  /** Tickets show their category's name: a category still holding tickets stays. */
  async deleteCategory(id: number): Promise<void> {
    // Decided by the one write, against a ticket being opened in it (which writes the same row); in
    // a transaction so that a certification conflict runs it again.
    await this.#db.transaction(async () => {
      const category = await SupportCategory.find(this.#db, id);
      const { affectedRows } = await this.#db.run(sql`delete from ${SupportCategory} where ${K.id} = ${id} and ${K.tickets} = 0`);
      if (affectedRows > 0) return this.#record('category', 'delete', id, `Deleted ticket category ${category?.name ?? id}`, category);
      // A locking read sees the tickets committed since the read above (MariaDB's snapshot), which held the delete back.
      const holding = await SupportCategory.find(this.#db, id, 'update');
      if (!holding) throw new DomainError('CATEGORY_NOT_FOUND', `No support category with ID ${id}.`);
      throw new DomainError('CONFLICT', `Support category ${id} still holds ${holding.tickets} ticket(s).`);
    });
  }

  // ---- quick answers

  async listAnswers(page: Page): Promise<AnswerRow[]> {
    return (await SupportAnswer.select(this.#db, sql`order by ${SupportAnswer.c.id}${pageClause(page)}`)).map(answerRow);
  }

  async #answer(id: number, lock?: Lock): Promise<AnswerRow> {
    const answer = await SupportAnswer.find(this.#db, id, lock);
    if (!answer) throw new DomainError('ANSWER_NOT_FOUND', `No quick answer with ID ${id}.`);
    return answerRow(answer);
  }

  getAnswer(id: number): Promise<AnswerRow> {
    return this.#answer(id);
  }

  async createAnswer(input: AnswerInput): Promise<AnswerRow> {
    const { title, content } = input;
    return this.#db.transaction(async () => {
      const id = await SupportAnswer.insert(this.#db, { title, content });
      await this.#record('answer', 'create', id, `Created quick answer ${title}`, undefined, { id, title, content });
      return { id: String(id), title, content };
    });
  }

  async updateAnswer(id: number, patch: Partial<AnswerInput>): Promise<AnswerRow> {
    return this.#db.transaction(async () => {
      const current = await this.#answer(id, 'update');
      await SupportAnswer.update(this.#db, id, { title: patch.title, content: patch.content });
      const after = { ...current, title: patch.title ?? current.title, content: patch.content ?? current.content };
      await this.#record('answer', 'update', id, `Changed quick answer ${after.title}`, current, after);
      return after;
    });
  }

  async deleteAnswer(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.#answer(id, 'update');
      await this.#db.run(sql`delete from ${SupportAnswer} where ${SupportAnswer.c.id} = ${id}`);
      await this.#record('answer', 'delete', id, `Deleted quick answer ${before.title}`, before);
    });
  }
}
