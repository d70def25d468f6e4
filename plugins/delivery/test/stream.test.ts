/**
 * The SSE stream's bounds: a game server holds at most `streamsPerServer` streams (a new one
 * replaces its oldest, so a plugin that reconnects is never locked out), and a stream ends after
 * `streamMaxSeconds` (the client reconnects after the `retry` it was given).
 */
import { request, type ClientRequest } from 'node:http';
import t from 'tap';
import { ADMIN_KEY, build } from '../../../test/helper.ts';
import { DELIVERY_FEATURES, makeServer } from './fixtures.ts';

interface Stream {
  req: ClientRequest;
  text(): string;
  ended(): boolean;
  /** Resolves when the stream has ended. */
  closed: Promise<void>;
}

/** Opens a stream and waits for its first bytes. */
function open(address: string, token: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    let text = '';
    let ended = false;
    let end = () => {};
    const closed = new Promise<void>((resolve) => {
      end = () => {
        ended = true;
        resolve();
      };
    });
    const req = request(`${address}/api/delivery/stream?token=${token}`, { headers: { 'x-api-key': ADMIN_KEY }, agent: false });
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        resolve({ req, text: () => text, ended: () => ended, closed });
      });
      res.on('close', end);
    });
    req.on('error', end);
    req.end();
  });
}

t.test('a new stream for a game server replaces its oldest past streamsPerServer; other servers keep theirs', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { delivery: { streamsPerServer: 2 } } } });
  const survival = await makeServer(app, 'Survival');
  const lobby = await makeServer(app, 'Lobby');
  const address = await app.listen({ host: '127.0.0.1', port: 0 });

  const other = await open(address, lobby.token);
  const streams: Stream[] = [];
  for (let i = 0; i < 5; i++) streams.push(await open(address, survival.token));
  t.teardown(() => {
    for (const s of [other, ...streams]) s.req.destroy();
  });
  // Each replaced on the open that came two after it: by the fifth's first bytes, the three oldest had been told to end.
  await Promise.all(streams.slice(0, 3).map((s) => s.closed));
  t.same(
    streams.map((s) => s.ended()),
    [true, true, true, false, false],
    'the three oldest were closed, the two newest stay',
  );
  t.notOk(other.ended(), "another server's stream is untouched");
  t.match(streams[4]!.text(), /event: work/, 'the newest is a working stream');
});

t.test('a stream ends after streamMaxSeconds', async (t) => {
  const app = await build(t, { features: DELIVERY_FEATURES, config: { plugins: { delivery: { streamMaxSeconds: 1 } } } });
  const survival = await makeServer(app, 'Survival');
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const opened = Date.now();
  const stream = await open(address, survival.token);
  t.teardown(() => stream.req.destroy());
  t.match(stream.text(), /retry: \d+/, 'the client was told when to reconnect');
  // The stream's lifetime is a real timer, the thing under test; the bound only turns a stream that never ends into a failure.
  await Promise.race([stream.closed, new Promise((r) => setTimeout(r, 15_000).unref())]);
  const ms = Date.now() - opened;
  t.ok(stream.ended() && ms >= 900, `closed by the server after ${ms} ms`);
});
