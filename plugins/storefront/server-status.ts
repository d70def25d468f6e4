/**
 * The game server's address and how many play on it now, for the storefront's home page: asked
 * from this server (never the player's browser) with Minecraft's server list ping (handshake, then
 * status request; the answer is JSON with `players.online` and `players.max`), and kept for
 * `cacheSeconds` so a busy home page pings once per period whatever its traffic.
 */
import { Socket } from 'node:net';
import { clockNow } from '../../core/clock.ts';

export interface ServerStatus {
  online: number;
  max: number;
}

/** What a player types to join, split: `host` or `host:port` (25565 when none). */
export function parseAddress(address: string): { host: string; port: number } | undefined {
  const found = /^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]+\])(?::([0-9]{1,5}))?$/.exec(address.trim());
  if (!found) return undefined;
  const port = found[2] === undefined ? 25565 : Number(found[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: found[1]!.replace(/^\[|\]$/g, ''), port };
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (v !== 0);
  return Buffer.from(bytes);
}

/** A varint at `at`: its value and where it ends; undefined while more bytes are needed. */
function readVarint(buf: Buffer, at: number): { value: number; end: number } | undefined {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (at + i >= buf.length) return undefined;
    const byte = buf[at + i]!;
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return { value, end: at + i + 1 };
  }
  throw new Error('the server answered a malformed number');
}

const packet = (...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([varint(body.length), body]);
};
const text = (s: string) => {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([varint(bytes.length), bytes]);
};

/** The longest status answer read (a server's description and icon fit well within it). */
const MAX_ANSWER = 256 * 1024;

/** One server list ping: connects, asks for the status and reads the player counts. */
export function ping(host: string, port: number, timeoutMs: number): Promise<ServerStatus> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let buf = Buffer.alloc(0);
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`no answer within ${timeoutMs} ms`)));
    socket.once('error', fail);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      try {
        const length = readVarint(buf, 0);
        if (!length) return;
        if (length.value > MAX_ANSWER) return fail(new Error('the status answer is too long'));
        if (buf.length < length.end + length.value) return;
        const id = readVarint(buf, length.end)!;
        const size = readVarint(buf, id.end)!;
        const json = JSON.parse(buf.subarray(size.end, size.end + size.value).toString('utf8')) as { players?: { online?: unknown; max?: unknown } };
        const { online, max } = json.players ?? {};
        if (id.value !== 0 || !Number.isSafeInteger(online) || !Number.isSafeInteger(max)) return fail(new Error('the status answer has no player counts'));
        socket.end();
        resolve({ online: online as number, max: max as number });
      } catch (err) {
        fail(err as Error);
      }
    });
    socket.connect(port, host, () => {
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16BE(port);
      // Handshake (protocol -1: "any", as server lists send), next state 1 (status); then the status request.
      socket.write(Buffer.concat([packet(varint(0), varint(-1), text(host), portBytes, varint(1)), packet(varint(0))]));
    });
  });
}

/** The server's status, asked at most once per `cacheSeconds` (a failure too: an offline server is not hammered). */
export class ServerStatusCache {
  readonly #opts: { cacheSeconds: number; timeoutMs: number };
  #kept: { address: string; at: number; answer: Promise<ServerStatus | undefined> } | undefined;

  constructor(opts: { cacheSeconds: number; timeoutMs: number }) {
    this.#opts = opts;
  }

  /** undefined: no address set, or the server did not answer (offline). */
  status(address: string): Promise<ServerStatus | undefined> {
    const kept = this.#kept;
    if (kept && kept.address === address && clockNow() - kept.at < this.#opts.cacheSeconds * 1000) return kept.answer;
    const where = parseAddress(address);
    const answer = where ? ping(where.host, where.port, this.#opts.timeoutMs).catch(() => undefined) : Promise.resolve(undefined);
    this.#kept = { address, at: clockNow(), answer };
    return answer;
  }
}
