/** Issue 16: limits that must hold under parallel and disguised attempts. */
import t from 'tap';
import { build, call } from '../../../test/helper.ts';
import { NO_RATE_LIMIT } from './fixtures.ts';

t.test('the register limit holds for parallel registers from one ip', async (t) => {
  const app = await build(t, { features: ['users', 'auth'], config: NO_RATE_LIMIT });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => call(app, '/api/auth/register', {
    body: { username: `racer_${i}`, password: 'hunter22', email: `racer${i}@example.com`, ip: '203.0.113.9', useragent: 'GameServer/1.0' },
  })));
  const codes = results.map((r) => r.statusCode === 200 ? 'ok' : r.json().error);
  t.equal(codes.filter((c) => c === 'ok').length, 3, 'exactly the limit of 3 pass');
  t.equal(codes.filter((c) => c === 'REGISTER_LIMIT').length, 17, 'the rest get REGISTER_LIMIT');
  const [row] = await app.db.query<{ n: number }>('select count(*) as n from users_accounts where creation_ip = ?', ['203.0.113.9']);
  t.equal(Number(row!.n), 3);
});
