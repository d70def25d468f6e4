/**
 * One remote address holds at most `server.maxConnectionsPerAddress` connections, counted when
 * they are accepted: a slow-header flood from one address cannot take the slots of the others.
 * A reverse proxy's address (`server.proxyAddresses`) carries many clients and has no such cap.
 */
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { build } from './helper.ts';
import { SLOW_HEADERS, getFrom, rawSocket } from './sockets.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('connections over the per-address cap are closed at accept; other addresses and the proxy are served', async (t) => {
  const app = await build(t, {
    features: ['users'],
    config: { server: { maxConnections: 10, maxConnectionsPerAddress: 3, proxyAddresses: ['127.0.0.1', '127.0.10.0/24'] } },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;

  const flood = await Promise.all(Array.from({ length: 10 }, () => rawSocket(port, '127.0.0.2', SLOW_HEADERS)));
  t.teardown(() => {
    for (const s of flood) s.socket.destroy();
  });
  await sleep(200);
  t.equal(flood.filter((s) => s.isClosed()).length, 7, "all but 3 of one address's slow-header connections closed at once");
  t.equal(flood.filter((s) => s.isClosed() && s.received() !== '').length, 0, 'closed without an answer: nothing was asked yet');
  t.equal(await getFrom(port, '/health', '127.0.0.3'), 200, 'another address is served meanwhile');

  const proxied = await Promise.all(Array.from({ length: 6 }, (_, i) => rawSocket(port, i % 2 ? '127.0.0.1' : '127.0.10.7', SLOW_HEADERS)));
  t.teardown(() => {
    for (const s of proxied) s.socket.destroy();
  });
  await sleep(200);
  t.equal(proxied.filter((s) => s.isClosed()).length, 0, "the proxies' addresses and range have no per-address cap");

  flood.find((s) => !s.isClosed())!.socket.destroy();
  await sleep(100);
  const again = await rawSocket(port, '127.0.0.2', SLOW_HEADERS);
  t.teardown(() => again.socket.destroy());
  await sleep(200);
  t.notOk(again.isClosed(), "a closed connection frees its address's slot");
  const refused = await rawSocket(port, '127.0.0.2', SLOW_HEADERS);
  t.ok(await Promise.race([refused.closed.then(() => true), sleep(500).then(() => false)]), 'and the cap holds again');
});

t.test('a proxy address that is neither an address nor a range stops boot with a sentence naming it', async (t) => {
  await t.rejects(build(t, { features: ['users'], config: { server: { proxyAddresses: ['localhost'] } } }), {
    message: 'Invalid setting server.proxyAddresses: "localhost" is not an IP address or CIDR range.',
  });
});
