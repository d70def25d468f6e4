import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { rootDir } from '../../../core/config.ts';
import { count, fields, sql } from '../../../core/sql.ts';
import { ADMIN_KEY, scratchDir, sharedDatabaseUrl } from '../../../test/helper.ts';
import { SubscriptionsPeriod, SubscriptionsSubscription } from '../entities.ts';
import { balanceOf, ledger, makeUser, subscribe, subscriptionsApp, sweep, vipPlan } from './fixtures.ts';

const PLAYERS = 3;

t.test("a server SIGKILLed between a renewal's charge and its commit: after the restart every renewal is made once", async (t) => {
  const url = await sharedDatabaseUrl(t);
  const setup = await subscriptionsApp(t, { databaseUrl: url });
  const { productId } = await vipPlan(setup);
  const players: number[] = [];
  for (let i = 0; i < PLAYERS; i++) players.push(await makeUser(setup, `player${i}`, 1_000));
  for (const id of players) t.equal((await subscribe(setup, id, productId)).statusCode, 201);
  // Every period has ended: the server's first sweep renews them.
  await setup.db.run(sql`update ${SubscriptionsSubscription} set ${SubscriptionsSubscription.c.periodEnd} = ${'2000-01-01 00:00:00'}`);
  await setup.close();

  const config = join(scratchDir(t), 'config.json');
  writeFileSync(config, JSON.stringify({ plugins: { subscriptions: { sweepMs: 50 } } }));
  const env = { DATABASE_URL: url, API_KEY: ADMIN_KEY, CONFIG: config };
  // As `npm start` runs it; its first sweep may come before it listens, so no address is waited for.
  const killed = spawn(process.execPath, [join(rootDir, 'core/server.js')], {
    env: {
      ...process.env,
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
      KILL_AFTER_SUBSCRIPTION_DEBIT: '1',
      NODE_OPTIONS: `--import=${join(import.meta.dirname, 'kill-mid-renewal.ts')}`,
    },
    cwd: rootDir,
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  t.teardown(() => {
    if (killed.exitCode === null && killed.signalCode === null) killed.kill('SIGKILL');
  });
  const signal = await new Promise((resolve) => killed.once('exit', (_code, s) => resolve(s)));
  t.equal(signal, 'SIGKILL', 'the server died inside a renewal');

  const app = await subscriptionsApp(t, { databaseUrl: url });
  for (const id of players) t.same(await ledger(app, id, 'subscription'), [-500], 'the charge of the killed renewal was never committed');
  t.same(await sweep(app), { renewed: PLAYERS, failed: 0, ended: 0 }, 'after the restart each renewal is made');
  t.same(await sweep(app), { renewed: 0, failed: 0, ended: 0 });
  for (const id of players) {
    t.same(await ledger(app, id, 'subscription'), [-500, -500], 'charged once for the period');
    t.equal(await balanceOf(app, id), 0);
  }
  const [periods] = await app.db.query(sql`select ${fields({ n: count() })} from ${SubscriptionsPeriod} where ${SubscriptionsPeriod.c.periodNo} = ${2}`);
  t.equal(Number(periods!.n), PLAYERS, 'one second period each');
});
