/**
 * One remote address holds at most `server.maxConnectionsPerAddress` connections, counted when
 * they are accepted: a slow-header flood from one address cannot take the slots of the others.
 * A reverse proxy's address (`server.proxyAddresses`) carries many clients and has no such cap.
 */
import type { AddressInfo, Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { until } from './fixtures.ts';
import { build } from './helper.ts';
import { SLOW_HEADERS, getFrom, rawSocket } from './sockets.ts';

/**
 * The server's side of the connections it accepts, in order, as the cap left them: its listener
 * runs first, so a connection over the cap is already destroyed here, and a kept one's slot is
 * free once its `closed` is true (the cap's close listener ran first too).
 */
function serverSides(app: FastifyInstance) {
  const seen: { address: string; socket: Socket; closed: boolean }[] = [];
  app.server.on('connection', (socket: Socket) => {
    const side = { address: String(socket.remoteAddress), socket, closed: false };
    seen.push(side);
    socket.once('close', () => {
      side.closed = true;
    });
  });
  const from = (address: string) => seen.filter((s) => s.address === address);
  return {
    from,
    /** The first `count` connections from `address`, once the server has accepted them. */
    async accepted(address: string, count: number) {
      await until(() => from(address).length >= count);
      return from(address).slice(0, count);
    },
  };
}

t.test('connections over the per-address cap are closed at accept; other addresses and the proxy are served', async (t) => {
  const app = await build(t, {
    features: ['users'],
    config: { server: { maxConnections: 10, maxConnectionsPerAddress: 3, proxyAddresses: ['127.0.0.1', '127.0.10.0/24'] } },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const server = serverSides(app);

  const flood = await Promise.all(Array.from({ length: 10 }, () => rawSocket(port, '127.0.0.2', SLOW_HEADERS)));
  t.teardown(() => {
    for (const s of flood) s.socket.destroy();
  });
  const floodSides = await server.accepted('127.0.0.2', 10);
  t.equal(floodSides.filter((s) => s.socket.destroyed).length, 7, "all but 3 of one address's slow-header connections closed at once");
  let closes = 0;
  await new Promise<void>((resolve) => {
    for (const s of flood) void s.closed.then(() => ++closes === 7 && resolve());
  });
  t.equal(flood.filter((s) => s.isClosed() && s.received() !== '').length, 0, 'closed without an answer: nothing was asked yet');
  t.equal(await getFrom(port, '/health', '127.0.0.3'), 200, 'another address is served meanwhile');

  const proxied = await Promise.all(Array.from({ length: 6 }, (_, i) => rawSocket(port, i % 2 ? '127.0.0.1' : '127.0.10.7', SLOW_HEADERS)));
  t.teardown(() => {
    for (const s of proxied) s.socket.destroy();
  });
  const proxiedSides = [...(await server.accepted('127.0.0.1', 3)), ...(await server.accepted('127.0.10.7', 3))];
  t.equal(proxiedSides.filter((s) => s.socket.destroyed).length, 0, "the proxies' addresses and range have no per-address cap");
  t.equal(proxied.filter((s) => s.isClosed()).length, 0, "nor closed on the clients' side");

  const kept = flood.findIndex((s) => !s.isClosed());
  flood[kept]!.socket.destroy();
  // The seven refused at accept and now this one: its slot is free once the server saw it close.
  await until(() => floodSides.filter((s) => s.closed).length === 8);
  const again = await rawSocket(port, '127.0.0.2', SLOW_HEADERS);
  t.teardown(() => again.socket.destroy());
  const [, againSide] = (await server.accepted('127.0.0.2', 11)).slice(9);
  t.notOk(againSide!.socket.destroyed || again.isClosed(), "a closed connection frees its address's slot");
  const refused = await rawSocket(port, '127.0.0.2', SLOW_HEADERS);
  const [refusedSide] = (await server.accepted('127.0.0.2', 12)).slice(11);
  t.ok(refusedSide!.socket.destroyed, 'and the cap holds again');
  await refused.closed;
});

t.test('a proxy address that is neither an address nor a range stops boot with a sentence naming it', async (t) => {
  await t.rejects(build(t, { features: ['users'], config: { server: { proxyAddresses: ['localhost'] } } }), {
    message: 'Invalid setting server.proxyAddresses: "localhost" is not an IP address or CIDR range.',
  });
});
