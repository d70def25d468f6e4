import { defineEntity, p } from '../../core/table.ts';

/**
 * Message and answer bodies may be as long as the 64 KiB field limit, in bytes of utf8mb4;
 * MySQL's `text` stops one byte short of that (65,535), so those columns are `mediumtext`.
 * SQLite gives the name text affinity, which is all it has.
 */
const longText = () => p.text().columnType('mediumtext');

export const SupportCategory = defineEntity({
  name: 'SupportCategory',
  tableName: 'support_categories',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(100),
    /**
     * Tickets opened in it (tickets are never moved or deleted). Opening one and deleting the
     * category both write this row, so on Galera certification settles a race between them.
     */
    tickets: p.integer().default(0),
  },
});

export const SupportTicket = defineEntity({
  name: 'SupportTicket',
  tableName: 'support_tickets',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** A users account id; no ORM relation crosses features. */
    accountId: p.integer().index(),
    categoryId: p.integer().index(),
    title: p.string().length(255),
    /** 1 Open, 2 Answered, 3 User-Reply, 4 Closed (decisions.md §7). */
    statusId: p.integer().index(),
    /** 1 after the player wrote last, 0 after staff did (decisions.md §7). */
    readStatus: p.integer(),
    updateDate: p.string().length(19),
    creationDate: p.string().length(19),
  },
});

export const SupportMessage = defineEntity({
  name: 'SupportMessage',
  tableName: 'support_messages',
  properties: {
    id: p.integer().primary().autoincrement(),
    ticketId: p.integer().index(),
    accountId: p.integer(),
    message: longText(),
    /** 1 written by the player, 2 by staff. */
    writeLocation: p.integer(),
    creationDate: p.string().length(19),
  },
});

export const SupportAnswer = defineEntity({
  name: 'SupportAnswer',
  tableName: 'support_answers',
  properties: {
    id: p.integer().primary().autoincrement(),
    title: p.string().length(255),
    content: longText(),
  },
});

export const entities = [SupportCategory, SupportTicket, SupportMessage, SupportAnswer];
