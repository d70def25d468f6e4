/**
 * The game server on the home page (issue 49, item 6): its address and the players online, asked
 * by this server with Minecraft's server list ping and cached; tried against a small fake server
 * on 127.0.0.1 that speaks the protocol and counts the pings it answers.
 */
import t, { type Test } from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { build, call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { parseAddress } from '../server-status.ts';
import { FakeGameServer } from './fake-game-server.ts';

const setAddress = async (t: Test, app: Awaited<ReturnType<typeof build>>, address: string) =>
  t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { storefrontServerAddress: address }, as: 'json' })).statusCode, 200, address);

t.test('the home page shows the game server and its players online, pinged from the server and cached', async (t) => {
  const game = await new FakeGameServer().start(t);
  const clock = new TestClock();
  const app = await build(t, { clock, config: { plugins: { storefront: { serverStatus: { cacheSeconds: 30, timeoutMs: 2000 } } } } });
  const v = new Visitor(app);
  t.notMatch((await v.get('/')).body, /class="server"/, 'no address set: nothing shown');
  t.equal(game.handshakes.length, 0);

  await setAddress(t, app, `127.0.0.1:${game.port}`);
  const home = await v.get('/');
  t.match(home.body, /<section aria-labelledby="server-h" class="server">/);
  t.match(home.body, new RegExp(`<strong class="address">127\\.0\\.0\\.1:${game.port}</strong>`), 'the address to join');
  t.match(home.body, /3 of 20 players online/, 'the players online, from the ping');
  t.same(game.handshakes, [{ host: '127.0.0.1', port: game.port, nextState: 1 }], 'a status handshake with the host and port');

  game.players = { online: 7, max: 20 };
  t.match((await v.get('/')).body, /3 of 20 players online/, 'within cacheSeconds: the kept answer');
  t.equal(game.handshakes.length, 1, 'no second ping');
  clock.advance(31_000);
  t.match((await v.get('/')).body, /7 of 20 players online/, 'after it: pinged again');
  t.equal(game.handshakes.length, 2);

  await game.stop();
  clock.advance(31_000);
  const down = await v.get('/');
  t.equal(down.statusCode, 200, 'a server that is down never fails the page');
  t.match(down.body, /The server does not answer right now\./);
  t.match((await v.get('/?lang=de')).body, /Der Server antwortet gerade nicht\./);
});

t.test('the address setting takes host or host:port and nothing else', async (t) => {
  const app = await build(t);
  for (const bad of ['http://play.example.org', 'play.example.org:port', 'a b', 'play.example.org/x']) {
    const res = await call(app, '/api/admin/settings', { method: 'PATCH', body: { storefrontServerAddress: bad }, as: 'json' });
    t.equal(res.statusCode, 400, bad);
    t.equal(res.json().error, 'VALIDATION_ERROR', bad);
  }
  t.same(parseAddress('play.example.org'), { host: 'play.example.org', port: 25565 }, 'the game port when none is given');
  t.same(parseAddress('mc.example.org:25577'), { host: 'mc.example.org', port: 25577 });
  t.equal(parseAddress('mc.example.org:70000'), undefined);
});
