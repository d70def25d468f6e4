/** Issue 16: the host's defences (logging, strict input, sockets, boot). */
import t from 'tap';
import { buildApp } from '../core/app.ts';
import { ADMIN_KEY, call, freshDatabaseUrl, onMysql } from './helper.ts';

t.test('a failing statement is logged with its error code, never its SQL, parameters or values', async (t) => {
  const lines: string[] = [];
  const app = await buildApp({
    env: { DATABASE_URL: await freshDatabaseUrl(t), API_KEY: ADMIN_KEY },
    config: { log: { level: 'info' }, plugins: { auth: { rateLimit: { register: { max: 0 } } } } },
    logStream: { write: (line: string) => { lines.push(line); } },
  });
  t.teardown(() => app.close());
  await app.db.run('drop table auth_credentials');
  const res = await call(app, '/api/auth/register', { body: { username: 'Sentinel_77', password: 'hunter22', email: 'sentinel@example.com', ip: '10.0.0.1', useragent: 'x' } });
  t.equal(res.statusCode, 500);
  const failure = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
  t.ok(failure, 'the failure was logged');
  t.equal(failure.err.code, onMysql ? 'ER_NO_SUCH_TABLE' : 'ERR_SQLITE_ERROR', 'with the database error code');
  const text = lines.join('');
  for (const secret of ['$argon2id', 'insert into', 'auth_credentials (', 'password_hash']) t.notOk(text.includes(secret), `no ${secret}`);
  t.notOk(/"sql"|"sqlMessage"|"params"/.test(text), 'no driver fields');
});
