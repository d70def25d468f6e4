/**
 * Raw client sockets for the connection tests: from a chosen loopback address (Linux routes all of
 * 127.0.0.0/8 to the loopback interface, so 127.0.0.2 is a second client on the same machine),
 * with what they received and when the server closed them.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawSocket {
  socket: Socket;
  received(): string;
  /** Whether the server has closed it yet. */
  isClosed(): boolean;
  /** Milliseconds from connect to close. */
  closed: Promise<number>;
}

/** A socket to 127.0.0.1:port from `from`, once connected (or refused), having sent `send`. */
export function rawSocket(port: number, from = '127.0.0.1', send = ''): Promise<RawSocket> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    let data = '';
    let ended = false;
    const opened = Date.now();
    socket.on('data', (chunk) => {
      data += chunk.toString();
    });
    socket.on('error', () => {
      /* a reset is a close too */
    });
    const closed = new Promise<number>((r) =>
      socket.once('close', () => {
        ended = true;
        r(Date.now() - opened);
      }),
    );
    const made = { socket, received: () => data, isClosed: () => ended, closed };
    socket.once('connect', () => {
      if (send) socket.write(send);
      resolve(made);
    });
    socket.once('close', () => resolve(made));
  });
}

/** GET `path` from `from`, on a connection of its own: the status, or 0 when it failed or took over `timeoutMs`. */
export function getFrom(port: number, path: string, from: string, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress: from, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** Headers that never finish: the slow-header client. */
export const SLOW_HEADERS = 'GET /health HTTP/1.1\r\nHost: x\r\n';
