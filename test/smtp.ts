/**
 * A real SMTP server for the email tests, on 127.0.0.1 and a free port, stopped when the test
 * ends: it keeps what it receives, and can refuse on purpose (a temporary 451) a number of times.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { TestLike } from './helper.ts';

export interface Received {
  from: string;
  to: string[];
  subject: string;
  text: string;
  /** The HTML part, or undefined for a text-only mail. */
  html?: string;
}

export class TestSmtp {
  readonly received: Received[] = [];
  /** Refusals left: each MAIL FROM is answered 451 while this is above 0. */
  refuse = 0;
  /** Milliseconds each message takes to be accepted. */
  delayMs = 0;
  /** While set, a message's data is taken in but never answered (a server that hangs); `stalled` counts them. */
  stall = false;
  stalled = 0;
  readonly #server: SMTPServer;
  readonly #waiting: (() => void)[] = [];
  port = 0;
  /** The users that signed in (with `login` set). */
  readonly logins: string[] = [];

  /** With `login`, the server asks for SMTP sign-in (over plain text, as in a test) and takes only that user and password. */
  constructor({ login }: { login?: { user: string; pass: string } } = {}) {
    this.#server = new SMTPServer({
      authOptional: !login,
      allowInsecureAuth: true,
      disabledCommands: login ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
      onAuth: (auth, _session, callback) => {
        if (auth.username !== login?.user || auth.password !== login?.pass) return callback(new Error('Invalid username or password'));
        this.logins.push(auth.username ?? '');
        callback(null, { user: auth.username });
      },
      logger: false,
      onMailFrom: (_address, _session, callback) => {
        if (this.refuse <= 0) return callback();
        this.refuse--;
        callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () =>
          this.stall
            ? this.stalled++
            : setTimeout(async () => {
                // Read as a mail program reads it: MIME words, transfer encodings and the alternative parts decoded.
                const mail = await simpleParser(Buffer.concat(chunks));
                this.received.push({
                  from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                  to: session.envelope.rcptTo.map((r) => r.address),
                  subject: mail.subject ?? '',
                  text: mail.text ?? '',
                  html: mail.html === false ? undefined : mail.html,
                });
                for (const wake of this.#waiting.splice(0)) wake();
                callback();
              }, this.delayMs),
        );
      },
    });
  }

  async start(t: TestLike): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.server.address() as AddressInfo).port;
    t.teardown(() => new Promise<void>((resolve) => this.#server.close(resolve)));
    return this;
  }

  /** The config that sends to this server. */
  config(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { smtp: { host: '127.0.0.1', port: this.port, from: 'Store <store@example.org>', timeoutMs: 5000 }, ...extra };
  }

  /** Waits (up to `ms`) for a message matching `match`, and returns it. */
  async waitFor(match: (m: Received) => boolean, ms = 10000): Promise<Received> {
    const end = Date.now() + ms;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      const seen = JSON.stringify(this.received.map((m) => [m.to, m.subject]));
      if (Date.now() > end) throw new Error(`no such message arrived within ${ms} ms; received: ${seen}`);
      await new Promise<void>((resolve) => {
        this.#waiting.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }
}
