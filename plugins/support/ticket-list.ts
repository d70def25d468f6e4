/**
 * The ticket list's answer as JSON text, ticket by ticket. Staff tools and the chat bot read the
 * whole list again and again, and few tickets change between two reads. A ticket's JSON depends
 * only on its fields and messages as the service formats them, all read and formatted afresh on
 * every list; a ticket with all of them as in the last list answers with the JSON it had then,
 * instead of being serialized again (core/json-parts.ts).
 */
import { JsonParts, KeptJson, LastAnswer, sameFields } from '../../core/json-parts.ts';
import type { JsonText } from '../../core/schema-compilers.ts';
import type { MessageRow, TicketListRow } from './contract.ts';

const sameMessages = (a: MessageRow[], b: MessageRow[]) => a.length === b.length && a.every((m, i) => sameFields(m, b[i]!));
const sameTicket = (a: TicketListRow, b: TicketListRow) => sameFields(a, b, 'messages') && sameMessages(a.messages, b.messages);

const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

export class TicketListAnswers {
  readonly #tickets = new KeptJson<string, TicketListRow>(sameTicket, (ticket) => JSON.stringify(ticket));
  readonly #answer = new LastAnswer();

  /** `list` as the route's JSON, in UTF-8. */
  answer(list: TicketListRow[]): JsonText<TicketListRow[]> {
    const parts = new JsonParts();
    parts.put(OPEN);
    parts.list(list, (ticket) => parts.put(this.#tickets.json(ticket.id, ticket)));
    parts.put(CLOSE);
    this.#tickets.done();
    return this.#answer.bytes(parts);
  }
}
