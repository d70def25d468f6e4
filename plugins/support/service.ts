import type { Database, Dialect } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { EventBus } from '../../core/events.ts';
import { displayTimestamp, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { UsersService } from '../users/contract.ts';
import type { SupportService, TicketSummaryRow } from './contract.ts';
import type { MessageRow, TicketDetailRow, TicketListRow, TicketMessageRow } from './schemas.ts';

/** decisions.md §7. */
const Status = { OPEN: 1, ANSWERED: 2, USER_REPLY: 3, CLOSED: 4 } as const;
const WRITTEN_BY_USER = 1;
const WRITTEN_BY_STAFF = 2;

export interface Page {
  limit?: number;
  offset?: number;
}

export interface TicketFilter extends Page {
  statusId?: number;
  accountId?: number;
  categoryId?: number;
}

export interface MessageFilter extends Page {
  accountId?: number;
}

/** Who writes: an account id, or the chat user id an account is linked to. */
export interface Author {
  accountId?: number;
  chatUserId?: string;
}

export interface NewTicket {
  author: Author;
  categoryId: number;
  title: string;
  message: string;
  /** Defaults to Open. */
  statusId?: number;
}

export interface NewMessage {
  author: Author;
  message: string;
  isAdmin: boolean;
}

interface TicketRow {
  id: number; account_id: number; category_id: number; title: string; status_id: number; read_status: number;
  update_date: string; creation_date: string; category_name: string;
}
interface MessageDbRow {
  id: number; ticket_id: number; account_id: number; message: string; write_location: number; creation_date: string;
}

const TICKET_SELECT = `select t.id, t.account_id, t.category_id, t.title, t.status_id, t.read_status, t.update_date, t.creation_date,
  coalesce(c.name, '') as category_name from support_tickets t left join support_categories c on c.id = t.category_id`;
const MESSAGE_COLUMNS = 'm.id, m.ticket_id, m.account_id, m.message, m.write_location, m.creation_date';

function isId(id: number): boolean {
  return Number.isSafeInteger(id) && id > 0;
}

/**
 * ` limit … offset …` for optional paging. The values are written into the SQL, so they are
 * checked to be integers first: MySQL's unbounded limit does not fit a JS number parameter.
 */
function pageClause(page: Page, dialect: Dialect): string {
  const { limit, offset = 0 } = page;
  if (limit === undefined && offset === 0) return '';
  for (const [name, value, min] of [['limit', limit ?? 1, 1], ['offset', offset, 0]] as const) {
    if (!Number.isSafeInteger(value) || value < min) throw new DomainError('VALIDATION_ERROR', `${name} must be an integer of at least ${min}`);
  }
  // An offset alone needs an unbounded limit, which each dialect spells its own way.
  const unbounded = dialect === 'mysql' ? '18446744073709551615' : '-1';
  return ` limit ${limit ?? unbounded} offset ${offset}`;
}

type Row<F extends string> = { id: string } & Record<F, string>;

interface CatalogueSpec<F extends string> {
  table: string;
  /** API field names, which are also the column names. */
  fields: readonly F[];
  notFound: string;
  noun: string;
  /** Refuses a delete (by throwing) while other rows still need the row; runs with the row locked. */
  beforeDelete?: (id: number) => Promise<void>;
}

/** A small table admins manage (support categories, quick answers): the same five operations for each. */
export class Catalogue<F extends string> {
  readonly #db: Database;
  readonly #spec: CatalogueSpec<F>;
  readonly #columns: string;

  constructor(db: Database, spec: CatalogueSpec<F>) {
    this.#db = db;
    this.#spec = spec;
    this.#columns = ['id', ...spec.fields].join(', ');
  }

  #toRow(r: Record<string, unknown>): Row<F> {
    const out: Record<string, string> = { id: String(r.id) };
    for (const f of this.#spec.fields) out[f] = String(r[f]);
    return out as Row<F>;
  }

  async list(page: Page): Promise<Row<F>[]> {
    const rows = await this.#db.query(`select ${this.#columns} from ${this.#spec.table} order by id${pageClause(page, this.#db.dialect)}`);
    return rows.map((r) => this.#toRow(r));
  }

  /**
   * The row or its not-found error. Inside a transaction, until commit, `share` keeps others from
   * changing or deleting it and `update` also from share-locking it (SQLite serialises writers anyway).
   */
  async get(id: number, lock?: 'share' | 'update'): Promise<Row<F>> {
    const locking = lock === 'update' ? this.#db.forUpdate : lock === 'share' && this.#db.dialect === 'mysql' ? ' lock in share mode' : '';
    const [row] = isId(id) ? await this.#db.query(`select ${this.#columns} from ${this.#spec.table} where id = ?${locking}`, [id]) : [];
    if (!row) throw new DomainError(this.#spec.notFound, `No ${this.#spec.noun} with ID ${id}.`);
    return this.#toRow(row);
  }

  async create(values: Record<F, string>): Promise<Row<F>> {
    const { fields, table } = this.#spec;
    const { insertId } = await this.#db.run(
      `insert into ${table} (${fields.join(', ')}) values (${fields.map(() => '?').join(', ')})`, fields.map((f) => values[f]));
    return { id: String(insertId), ...values };
  }

  async update(id: number, patch: Partial<Record<F, string>>): Promise<Row<F>> {
    return this.#db.transaction(async () => {
      const current = await this.get(id, 'update');
      const fields = this.#spec.fields.filter((f) => patch[f] !== undefined);
      if (fields.length === 0) return current;
      await this.#db.run(`update ${this.#spec.table} set ${fields.map((f) => `${f} = ?`).join(', ')} where id = ?`, [...fields.map((f) => patch[f]), id]);
      return { ...current, ...Object.fromEntries(fields.map((f) => [f, patch[f]])) };
    });
  }

  async remove(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      await this.get(id, 'update');
      await this.#spec.beforeDelete?.(id);
      await this.#db.run(`delete from ${this.#spec.table} where id = ?`, [id]);
    });
  }
}

export class DbSupportService implements SupportService {
  readonly #db: Database;
  readonly #events: EventBus;
  readonly #users: UsersService;
  readonly #settings: SettingsService;
  readonly categories: Catalogue<'name'>;
  readonly answers: Catalogue<'title' | 'content'>;

  constructor(db: Database, events: EventBus, users: UsersService, settings: SettingsService) {
    this.#db = db;
    this.#events = events;
    this.#users = users;
    this.#settings = settings;
    this.categories = new Catalogue(db, {
      table: 'support_categories', fields: ['name'], notFound: 'CATEGORY_NOT_FOUND', noun: 'support category',
      // Tickets show their category's name: a category still holding tickets stays.
      beforeDelete: async (id) => {
        const [used] = await db.query<{ n: number }>('select count(*) as n from support_tickets where category_id = ?', [id]);
        const n = Number(used?.n ?? 0);
        if (n > 0) throw new DomainError('CONFLICT', `Support category ${id} still holds ${n} ticket(s).`);
      },
    });
    this.answers = new Catalogue(db, { table: 'support_answers', fields: ['title', 'content'], notFound: 'ANSWER_NOT_FOUND', noun: 'quick answer' });
  }

  /** Stored UTC timestamps as clients see them; the zone is read once per call. */
  #clock(): (ts: string) => string {
    const zone = this.#settings.get().timezone;
    return (ts) => displayTimestamp(ts, zone);
  }

  #summary(r: TicketRow, show: (ts: string) => string): TicketSummaryRow {
    return {
      id: String(r.id), accountID: String(r.account_id), categoryID: String(r.category_id), title: r.title,
      statusID: String(r.status_id), readStatus: String(r.read_status), updateDate: show(r.update_date),
      creationDate: show(r.creation_date), categoryName: r.category_name,
    };
  }

  #message(r: MessageDbRow, show: (ts: string) => string): MessageRow {
    return {
      id: String(r.id), accountID: String(r.account_id), message: r.message, writeLocation: String(r.write_location),
      creationDate: show(r.creation_date),
    };
  }

  async #tickets(filter: TicketFilter): Promise<TicketRow[]> {
    const where: string[] = [];
    const params: number[] = [];
    for (const [column, value] of [['t.status_id', filter.statusId], ['t.account_id', filter.accountId], ['t.category_id', filter.categoryId]] as const) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    return this.#db.query<TicketRow>(
      `${TICKET_SELECT}${where.length ? ` where ${where.join(' and ')}` : ''} order by t.id desc${pageClause(filter, this.#db.dialect)}`, params);
  }

  /**
   * The staff inbox: tickets newest first without their messages, `limit` at most, older than the
   * ticket `before` (keyset paging).
   */
  async inbox(filter: { statusId?: number; categoryId?: number; accountId?: number; before?: number; limit: number }): Promise<TicketSummaryRow[]> {
    const show = this.#clock();
    const where: string[] = [];
    const params: number[] = [];
    for (const [column, value] of [
      ['t.status_id = ?', filter.statusId], ['t.category_id = ?', filter.categoryId], ['t.account_id = ?', filter.accountId], ['t.id < ?', filter.before],
    ] as const) {
      if (value === undefined) continue;
      where.push(column);
      params.push(value);
    }
    const rows = await this.#db.query<TicketRow>(
      `${TICKET_SELECT}${where.length ? ` where ${where.join(' and ')}` : ''} order by t.id desc limit ?`, [...params, filter.limit]);
    return rows.map((r) => this.#summary(r, show));
  }

  /** Tickets not closed. */
  async openTicketCount(): Promise<number> {
    const [row] = await this.#db.query<{ n: number }>('select count(*) as n from support_tickets where status_id <> ?', [Status.CLOSED]);
    return Number(row!.n);
  }

  async ticketsOf(userId: number): Promise<TicketSummaryRow[]> {
    const show = this.#clock();
    return (await this.#tickets({ accountId: userId })).map((r) => this.#summary(r, show));
  }

  /** Newest first, each with its messages: two queries, whatever the number of tickets and messages. */
  async listTickets(filter: TicketFilter): Promise<TicketListRow[]> {
    const show = this.#clock();
    const tickets = await this.#tickets(filter);
    if (tickets.length === 0) return [];
    const byTicket = new Map<number, MessageRow[]>();
    const list = tickets.map((r) => {
      const messages: MessageRow[] = [];
      byTicket.set(Number(r.id), messages);
      return { ...this.#summary(r, show), messages };
    });
    // The ids come from the database as integers, so inlining them is safe, and it keeps the
    // query under the placeholder limits of both databases however many tickets a list holds.
    const messages = await this.#db.query<MessageDbRow>(
      `select ${MESSAGE_COLUMNS} from support_messages m where m.ticket_id in (${[...byTicket.keys()].join(',')}) order by m.id`);
    for (const m of messages) byTicket.get(Number(m.ticket_id))?.push(this.#message(m, show));
    return list;
  }

  async #requireTicket(id: number): Promise<TicketRow> {
    const [row] = isId(id) ? await this.#db.query<TicketRow>(`${TICKET_SELECT} where t.id = ?`, [id]) : [];
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
      ? await this.#db.query<{ status_id: number }>(`select status_id from support_tickets where id = ?${lock ? this.#db.forUpdate : ''}`, [id])
      : [];
    if (!row) throw new DomainError('TICKET_NOT_FOUND', `No ticket with ID ${id}.`);
    return Number(row.status_id);
  }

  async getTicket(id: number): Promise<TicketDetailRow> {
    const show = this.#clock();
    const ticket = await this.#requireTicket(id);
    const messages = await this.#db.query<MessageDbRow>(`select ${MESSAGE_COLUMNS} from support_messages m where m.ticket_id = ? order by m.id`, [id]);
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

  async #insertMessage(ticketId: number, accountId: number, message: string, writeLocation: number, at: string): Promise<number> {
    const { insertId } = await this.#db.run(
      'insert into support_messages (ticket_id, account_id, message, write_location, creation_date) values (?, ?, ?, ?, ?)',
      [ticketId, accountId, message, writeLocation, at]);
    return insertId;
  }

  /** Opens a ticket with its first message, written by the player. */
  async createTicket(input: NewTicket): Promise<number> {
    return this.#db.transaction(async () => {
      const accountId = await this.#authorId(input.author);
      // Share-locked so that the category cannot be deleted while a ticket is being opened in it.
      await this.categories.get(input.categoryId, 'share');
      const at = now();
      const { insertId: ticketId } = await this.#db.run(
        'insert into support_tickets (account_id, category_id, title, status_id, read_status, update_date, creation_date) values (?, ?, ?, ?, 1, ?, ?)',
        [accountId, input.categoryId, input.title, input.statusId ?? Status.OPEN, at, at]);
      await this.#insertMessage(ticketId, accountId, input.message, WRITTEN_BY_USER, at);
      await this.#events.emit('support.ticket.created', { ticketId, accountId });
      return ticketId;
    });
  }

  /** Closing a closed ticket changes nothing and is not an error. */
  async closeTicket(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      if (await this.#ticketStatus(id, true) === Status.CLOSED) return;
      await this.#db.run('update support_tickets set status_id = ?, update_date = ? where id = ?', [Status.CLOSED, now(), id]);
      await this.#events.emit('support.ticket.closed', { ticketId: id });
    });
  }

  async listMessages(ticketId: number, filter: MessageFilter): Promise<TicketMessageRow[]> {
    const show = this.#clock();
    await this.#ticketStatus(ticketId);
    const params: number[] = [ticketId];
    if (filter.accountId !== undefined) params.push(filter.accountId);
    const rows = await this.#db.query<MessageDbRow>(
      `select ${MESSAGE_COLUMNS} from support_messages m where m.ticket_id = ?${filter.accountId !== undefined ? ' and m.account_id = ?' : ''}
       order by m.id${pageClause(filter, this.#db.dialect)}`, params);
    return rows.map((r) => ({ ...this.#message(r, show), supportID: String(r.ticket_id) }));
  }

  /** Message ids are global; one that belongs to another ticket is not found here. */
  async getMessage(ticketId: number, id: number): Promise<TicketMessageRow> {
    await this.#ticketStatus(ticketId);
    const [row] = isId(id)
      ? await this.#db.query<MessageDbRow>(`select ${MESSAGE_COLUMNS} from support_messages m where m.id = ? and m.ticket_id = ?`, [id, ticketId])
      : [];
    if (!row) throw new DomainError('MESSAGE_NOT_FOUND', `Ticket ${ticketId} has no message with ID ${id}.`);
    return { ...this.#message(row, this.#clock()), supportID: String(row.ticket_id) };
  }

  /** A staff message answers the ticket, a player's reopens it as User-Reply (decisions.md §7). */
  async postMessage(ticketId: number, input: NewMessage): Promise<number> {
    return this.#db.transaction(async () => {
      if (await this.#ticketStatus(ticketId, true) === Status.CLOSED) throw new DomainError('TICKET_CLOSED', `Ticket ${ticketId} is closed.`);
      const accountId = await this.#authorId(input.author);
      const at = now();
      const messageId = await this.#insertMessage(ticketId, accountId, input.message, input.isAdmin ? WRITTEN_BY_STAFF : WRITTEN_BY_USER, at);
      await this.#db.run('update support_tickets set status_id = ?, read_status = ?, update_date = ? where id = ?',
        [input.isAdmin ? Status.ANSWERED : Status.USER_REPLY, input.isAdmin ? 0 : 1, at, ticketId]);
      await this.#events.emit('support.ticket.replied', { ticketId, messageId, accountId, isAdmin: input.isAdmin });
      return messageId;
    });
  }
}
