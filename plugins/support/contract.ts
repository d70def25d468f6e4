/** The support feature's contract: a user's tickets, for the users feature's `GET /api/users/<id>/tickets`. */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { dateStr, example, flagStr, idStr, str } from '../../core/schemas.ts';

/** A ticket as the per-user list shows it: without messages (api.md). */
export const TicketSummaryRow = Type.Object({
  id: idStr(), accountID: str('the user who opened it', '7'), categoryID: str(undefined, '2'), title: example('My rank is missing'),
  statusID: str('1 open, 2 answered, 3 awaiting staff, 4 closed', '1'), readStatus: flagStr(),
  updateDate: dateStr(), creationDate: dateStr(), categoryName: example('Store'),
});
export type TicketSummaryRow = typeof TicketSummaryRow.static;

export interface SupportService {
  /** A user's tickets, newest first, without messages. */
  ticketsOf(userId: number): Promise<TicketSummaryRow[]>;
}

export const supportRef = createServiceRef<SupportService>('support');

declare module '../../core/events.ts' {
  interface EventMap {
    'support.ticket.created': { ticketId: number; accountId: number };
    'support.ticket.replied': { ticketId: number; messageId: number; accountId: number; isAdmin: boolean };
    'support.ticket.closed': { ticketId: number };
  }
}
