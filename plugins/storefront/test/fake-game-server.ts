/** A game server's status side for the tests: Minecraft's server list ping answered on 127.0.0.1, stopped when the test ends. */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

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
export class FakeGameServer {
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
