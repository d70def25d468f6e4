/**
 * The support feature's contract: tickets with their messages, the support categories and the
 * quick answers, as the API shows them (ids and flags as strings, times in the site's zone).
 */
import { Type, type Static } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { dateStr, example, flagStr, idStr, row, str } from '../../core/schemas.ts';

/** A ticket as the per-user list shows it: without messages (api.md). */
export const TicketSummaryRow = Type.Object({
  id: idStr(),
  accountID: str('the user who opened it', '7'),
  categoryID: str(undefined, '2'),
  title: example('My rank is missing'),
  statusID: str('1 open, 2 answered, 3 awaiting staff, 4 closed', '1'),
  readStatus: flagStr(),
  updateDate: dateStr(),
  creationDate: dateStr(),
  categoryName: example('Store'),
});
export type TicketSummaryRow = typeof TicketSummaryRow.static;

export const MessageRow = row({
  id: idStr(),
  accountID: str('the author', '7'),
  message: example('I bought VIP but have no rank in game.'),
  writeLocation: example('1'),
  creationDate: dateStr(),
});
export type MessageRow = Static<typeof MessageRow>;

/** The messages endpoints also name the ticket (api.md). */
export const TicketMessageRow = row({ ...MessageRow.properties, supportID: str('the ticket', '12') });
export type TicketMessageRow = Static<typeof TicketMessageRow>;

export const TicketListRow = row({ ...TicketSummaryRow.properties, messages: Type.Array(MessageRow) });
export type TicketListRow = Static<typeof TicketListRow>;

export const CategoryRow = row({ id: str(undefined, '2'), name: example('Store') });
export type CategoryRow = Static<typeof CategoryRow>;

/** The single ticket carries its category as an object instead of categoryName (api.md). */
export const TicketDetailRow = row({
  ...Type.Omit(TicketSummaryRow, ['categoryName']).properties,
  category: CategoryRow,
  messages: Type.Array(MessageRow),
});
export type TicketDetailRow = Static<typeof TicketDetailRow>;

export const AnswerRow = row({ id: idStr(), title: example('Rank not received'), content: example('Rejoin the server: ranks are given on join.') });
export type AnswerRow = Static<typeof AnswerRow>;

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

export interface AnswerInput {
  title: string;
  content: string;
}

export interface SupportService {
  /** A user's tickets, newest first, without messages. */
  ticketsOf(userId: number): Promise<TicketSummaryRow[]>;
  /** Tickets newest first, each with its messages. */
  listTickets(filter: TicketFilter): Promise<TicketListRow[]>;
  /**
   * The staff inbox: tickets newest first without their messages, `limit` at most, older than the
   * ticket `before` (keyset paging).
   */
  inbox(filter: { statusId?: number; categoryId?: number; accountId?: number; before?: number; limit: number }): Promise<TicketSummaryRow[]>;
  /** Tickets not closed. */
  openTicketCount(): Promise<number>;
  /** Tickets waiting for staff: opened and not answered yet, or replied to by the player since. */
  awaitingAnswerCount(): Promise<number>;
  /** Throws TICKET_NOT_FOUND. */
  getTicket(id: number): Promise<TicketDetailRow>;
  /** Opens a ticket with its first message, written by the player; returns its id. */
  createTicket(input: NewTicket): Promise<number>;
  /** Closing a closed ticket changes nothing and is not an error. */
  closeTicket(id: number): Promise<void>;
  listMessages(ticketId: number, filter: MessageFilter): Promise<TicketMessageRow[]>;
  /** Throws TICKET_NOT_FOUND or MESSAGE_NOT_FOUND. */
  getMessage(ticketId: number, id: number): Promise<TicketMessageRow>;
  /** Replies to a ticket (TICKET_CLOSED when it is closed); returns the message's id. */
  postMessage(ticketId: number, input: NewMessage): Promise<number>;

  listCategories(page: Page): Promise<CategoryRow[]>;
  /** Throws CATEGORY_NOT_FOUND. */
  getCategory(id: number): Promise<CategoryRow>;
  createCategory(name: string): Promise<CategoryRow>;
  updateCategory(id: number, patch: { name?: string }): Promise<CategoryRow>;
  /** CONFLICT while the category still holds tickets. */
  deleteCategory(id: number): Promise<void>;

  listAnswers(page: Page): Promise<AnswerRow[]>;
  /** Throws ANSWER_NOT_FOUND. */
  getAnswer(id: number): Promise<AnswerRow>;
  createAnswer(input: AnswerInput): Promise<AnswerRow>;
  updateAnswer(id: number, patch: Partial<AnswerInput>): Promise<AnswerRow>;
  deleteAnswer(id: number): Promise<void>;
}

export const supportRef = createServiceRef<SupportService>('support');

declare module '../../core/events.ts' {
  interface EventMap {
    'support.ticket.created': { ticketId: number; accountId: number; title: string };
    'support.ticket.replied': { ticketId: number; messageId: number; accountId: number; isAdmin: boolean };
    'support.ticket.closed': { ticketId: number };
  }
}
