import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { build, call } from '../../../test/helper.ts';
import { DELIVERY_FEATURES, addCommand, buy, makeCategory, makeProduct, makeServer, makeUser } from './fixtures.ts';

/** The delivery_backlog series of a scrape, as `server/status` → value. */
async function backlog(app: FastifyInstance): Promise<Record<string, number>> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^delivery_backlog\{server="(\d+)",status="(\w+)"\} (\d+)$/gm)) out[`${m[1]}/${m[2]}`] = Number(m[3]);
  return out;
}

t.test('GET /metrics: commands not delivered yet, by game server and status', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES, config: { metrics: { enabled: true, public: true } } });
  const survival = await makeServer(app, 'Survival');
  const creative = await makeServer(app, 'Creative');
  const category = await makeCategory(app, { name: 'Items' });
  const sword = await makeProduct(app, { categoryID: category, name: 'Sword', price: '1' });
  await addCommand(app, sword, { serverID: survival.id, trigger: 'purchase', command: 'give {username} sword' });
  const steve = await makeUser(app, 'steve', 10_000);
  const empty = { [`${survival.id}/waiting`]: 0, [`${survival.id}/claimed`]: 0, [`${creative.id}/waiting`]: 0, [`${creative.id}/claimed`]: 0 };
  t.same(await backlog(app), empty, 'every server listed, nothing pending');

  t.equal((await buy(app, { userID: steve, products: [sword] })).statusCode, 200);
  const claimed = (await call(app, '/api/delivery/claim', { body: { token: survival.token }, as: 'urlencoded' })).json().commands;
  t.equal(claimed.length, 1);
  t.equal((await buy(app, { userID: steve, products: [sword] })).statusCode, 200);
  t.same(
    await backlog(app),
    { ...empty, [`${survival.id}/waiting`]: 1, [`${survival.id}/claimed`]: 1 },
    'one waiting, one claimed, on the server of the command',
  );

  const acked = await call(app, '/api/delivery/ack', { body: { token: survival.token, ids: [claimed[0].id], result: 'done' }, as: 'urlencoded' });
  t.same(acked.json().ids, [claimed[0].id]);
  t.same(await backlog(app), { ...empty, [`${survival.id}/waiting`]: 1 }, 'an acked command leaves the backlog');

  t.equal((await call(app, `/api/admin/delivery/servers/${creative.id}`, { method: 'DELETE' })).statusCode, 200);
  const left = await backlog(app);
  t.notOk(`${creative.id}/waiting` in left, 'a deleted server leaves no series behind');
});
