import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { call } from '../../../test/helper.ts';
import { supportRef } from '../contract.ts';
import { SupportMessage, SupportTicket } from '../entities.ts';
import { sql } from '../../../core/sql.ts';
import { desk, openTicket, type Desk } from './fixtures.ts';

/** Statements the app runs while `fn` does, except the API key cache refresh (timing-dependent). */
async function statements(app: FastifyInstance, fn: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const { query, queryArrays, run } = app.db;
  app.db.query = (sql) => {
    seen.push(sql.text);
    return query.call(app.db, sql) as never;
  };
  app.db.queryArrays = (sql) => {
    seen.push(sql.text);
    return queryArrays.call(app.db, sql);
  };
  app.db.run = (sql) => {
    seen.push(sql.text);
    return run.call(app.db, sql);
  };
  try {
    await fn();
  } finally {
    app.db.query = query;
    app.db.queryArrays = queryArrays;
    app.db.run = run;
  }
  return seen.filter((sql) => !sql.includes('core_api_keys'));
}

async function seed(d: Desk, tickets: number, replies: number): Promise<void> {
  for (let i = 0; i < tickets; i++) {
    const id = await openTicket(d, { title: `T${i}` });
    for (let j = 0; j < replies; j++) {
      await call(d.app, `/api/support/tickets/${id}/messages`, { body: { accountID: String(d.staff.id), message: `R${j}`, isAdmin: 'true' } });
    }
  }
}

t.test('the number of queries for a list does not grow with tickets or messages', async (t) => {
  const small = await desk(t);
  await seed(small, 2, 1);
  const large = await desk(t);
  await seed(large, 12, 4);
  for (const url of ['/api/support/tickets', '/api/support/tickets?statusID=2&limit=5', `/api/support/tickets/1/messages`]) {
    let smallBody: unknown[] = [];
    let largeBody: unknown[] = [];
    const few = await statements(small.app, async () => {
      smallBody = (await call(small.app, url)).json();
    });
    const many = await statements(large.app, async () => {
      largeBody = (await call(large.app, url)).json();
    });
    t.ok(largeBody.length > smallBody.length && smallBody.length > 0, `${url}: the larger desk answers more`);
    t.equal(many.length, few.length, `${url}: ${few.length} queries either way`);
    t.ok(many.length <= 2, `${url}: at most two queries (${many.join(' | ')})`);
  }
  const ofUser = await statements(large.app, () => large.app.services.get(supportRef).ticketsOf(large.player.id));
  t.equal(ofUser.length, 1, 'ticketsOf is one query');
  const listed = (await call(large.app, '/api/support/tickets')).json();
  t.equal(listed.length, 12);
  t.ok(
    listed.every((x: any) => x.messages.length === 5),
    'every ticket carries its five messages',
  );
});

t.test('a list of more tickets than one statement binds still carries every ticket its own messages', async (t) => {
  const d = await desk(t);
  const at = '2024-05-01 12:00:00';
  const count = 1030;
  // Seeded in two statements: a thousand tickets through the API would take most of a minute.
  await SupportTicket.insertMany(
    d.app.db,
    Array.from({ length: count }, (_, i) => ({
      accountId: d.player.id,
      categoryId: Number(d.categoryId),
      title: `T${i}`,
      statusId: 1,
      readStatus: 1,
      updateDate: at,
      creationDate: at,
    })),
  );
  const ids = (await SupportTicket.select(d.app.db, sql`order by ${SupportTicket.c.id}`)).map((r) => r.id);
  await SupportMessage.insertMany(
    d.app.db,
    ids.flatMap((id, i) => [
      { ticketId: id, accountId: d.player.id, message: `first of T${i}`, writeLocation: 1, creationDate: at },
      { ticketId: id, accountId: d.staff.id, message: `answer to T${i}`, writeLocation: 2, creationDate: at },
    ]),
  );
  // Filtered, the messages are read by the tickets' ids, a statement per 1,024; unfiltered, by the first and last id.
  for (const [query, reads, how] of [
    ['?statusID=1', 3, 'the tickets, then their messages in two statements'],
    ['', 2, 'the tickets, then their messages in one statement'],
  ] as const) {
    let listed: { title: string; messages: { message: string }[] }[] = [];
    const seen = await statements(d.app, async () => {
      listed = (await call(d.app, `/api/support/tickets${query}`)).json();
    });
    t.equal(listed.length, count, query);
    t.ok(
      listed.every((x) => x.messages.length === 2 && x.messages[0]!.message === `first of ${x.title}` && x.messages[1]!.message === `answer to ${x.title}`),
      `${query}: every ticket carries its own two messages, in order`,
    );
    t.equal(seen.length, reads, `${query}: ${how}`);
    t.notOk(
      seen.some((sql) => /\bin \(\s*[0-9]/.test(sql) || /between\s+[0-9]/.test(sql)),
      `${query}: no id is written into the SQL text`,
    );
  }
});

t.test('an unfiltered list reads every message when it holds every ticket, and a page only between its first and last', async (t) => {
  const d = await desk(t);
  await seed(d, 6, 1);
  for (const [query, titles, bounded] of [
    ['', ['T5', 'T4', 'T3', 'T2', 'T1', 'T0'], false],
    ['?limit=2&offset=1', ['T4', 'T3'], true],
    ['?offset=4', ['T1', 'T0'], true],
  ] as const) {
    let listed: { title: string; messages: { message: string }[] }[] = [];
    const seen = await statements(d.app, async () => {
      listed = (await call(d.app, `/api/support/tickets${query}`)).json();
    });
    t.strictSame(
      listed.map((x) => x.title),
      titles,
      `${query}: the tickets`,
    );
    t.ok(
      listed.every((x) => x.messages.map((m) => m.message).join() === 'Hello,R0'),
      `${query}: each with its own two messages`,
    );
    t.equal(seen.length, 2, `${query}: the tickets, then the messages`);
    t.equal(/\bwhere\b/.test(seen[1]!), bounded, `${query}: the messages ${bounded ? 'between two bounds' : 'all, with no condition'}`);
  }
});
