/**
 * The game server on the home page (issue 49, item 6): its address and the players online, asked
 * by this server with Minecraft's server list ping and cached; tried against a small fake server
 * on 127.0.0.1 that speaks the protocol and counts the pings it answers.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { TestClock } from '../../../core/clock.ts';
import { build, call } from '../../../test/helper.ts';
import { Visitor } from '../../../test/visitor.ts';
import { parseAddress } from '../server-status.ts';

/** Reads a varint at `at` of `buf`, or undefined while bytes are missing. */
function varint(buf: Buffer, at: number): { value: number; end: number } | undefined {
  let value = 0;
  for (let i = 0; i < 5 && at + i < buf.length; i++) {
    value |= (buf[at + i]! & 0x7f) << (7 * i);
    if ((buf[at + i]! & 0x80) === 0) return { value, end: at + i + 1 };
  }
  return undefined;
}
const writeVarint = (n: number) => {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n);
  return Buffer.from(out);
};

/** A game server's status side: answers a handshake and a status request with `players`, and keeps the handshakes it read. */
class FakeGameServer {
  players = { online: 3, max: 20 };
  readonly handshakes: { host: string; port: number; nextState: number }[] = [];
  readonly #server: Server;
  port = 0;

  constructor() {
    this.#server = createServer((socket: Socket) => {
      let buf = Buffer.alloc(0);
      const packets: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        for (let length = varint(buf, 0); length && buf.length >= length.end + length.value; length = varint(buf, 0)) {
          packets.push(buf.subarray(length.end, length.end + length.value));
          buf = buf.subarray(length.end + length.value);
        }
        if (packets.length < 2) return;
        const [handshake] = packets;
        const id = varint(handshake!, 0)!;
        const protocol = varint(handshake!, id.end)!;
        const hostLength = varint(handshake!, protocol.end)!;
        const host = handshake!.subarray(hostLength.end, hostLength.end + hostLength.value).toString('utf8');
        const port = handshake!.readUInt16BE(hostLength.end + hostLength.value);
        this.handshakes.push({ host, port, nextState: varint(handshake!, hostLength.end + hostLength.value + 2)!.value });
        const json = Buffer.from(JSON.stringify({ version: { name: '1.21', protocol: 767 }, players: this.players, description: { text: 'A server' } }));
        const body = Buffer.concat([writeVarint(0), writeVarint(json.length), json]);
        socket.end(Buffer.concat([writeVarint(body.length), body]));
      });
    });
  }

  async start(t: Test): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    t.teardown(() => this.stop());
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.#server.listening ? this.#server.close(() => resolve()) : resolve()));
  }
}

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
