/**
 * How often the worker looks at the queue: the sends of one event that end together share one look
 * (which writes their outcomes) unless the last look left due rows waiting for the slots they free.
 */
import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import { makeUser } from '../../../test/fixtures.ts';
import { RECEIVERS, startReceiver } from '../../../test/receiver.ts';
import type { Sql } from '../../../core/sql.ts';

t.test("an event's sends to three endpoints ending one by one share one look, not one look per send", async (t) => {
  // No timed poll, and three seconds of batching: only wake-ups make looks, and sends ending together share one.
  const a = await build(t, {
    features: ['users', 'credits', 'notifications'],
    config: { plugins: { notifications: { pollMs: 3_600_000, batchMs: 3000 } }, outbound: RECEIVERS },
  });
  // The three answer a tenth of a second apart, so their sends end one by one.
  const receivers = await Promise.all([0, 100, 200].map((delayMs) => startReceiver(() => ({ status: 200, delayMs }))));
  t.teardown(() => Promise.all(receivers.map((r) => r.close())));
  const ids: string[] = [];
  for (const r of receivers) {
    const res = await call(a, '/api/admin/notifications/endpoints', { body: { name: 'ERP', url: r.url, events: ['credits.changed'] }, as: 'json' });
    t.equal(res.statusCode, 201, res.body);
    ids.push(res.json().id);
  }
  await makeUser(a, 'Steve');

  // A look reads the endpoints' due rows in one statement.
  let looks = 0;
  const { queryArrays } = a.db;
  a.db.queryArrays = (statement: Sql<unknown>) => {
    if (/from `notifications_deliveries`\s+where `endpoint_id` =/.test(statement.text)) looks++;
    return queryArrays.call(a.db, statement);
  };
  t.equal((await call(a, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' } })).statusCode, 200);
  await Promise.all(receivers.map((r) => r.waitFor(1)));
  const delivered = async () => {
    for (const id of ids) {
      const rows = (await call(a, `/api/admin/notifications/endpoints/${id}/deliveries`)).json();
      if (!rows.some((d: { status: string }) => d.status === 'delivered')) return false;
    }
    return true;
  };
  while (!(await delivered())) await new Promise((r) => setTimeout(r, 50));
  // One look claims the three rows and one after the sends writes their outcomes; a busy machine (the worker then
  // looks once per quarter second) may split the sends' ends over two. One look per send would make four.
  t.ok(looks >= 2 && looks <= 3, `${looks} looks: fewer after the claim than sends`);
});
