/**
 * A private MariaDB server that a test can stop and start again (database outages, crash tests).
 * Uses the mariadbd binary on this machine (scripts/mariadb.sh installs it); listens on a free
 * loopback port and is stopped by its pid when the test ends.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, chownSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';

export function haveMariaDb(): boolean {
  try {
    execFileSync('mariadbd', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A port nothing listens on now, on the loopback address. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface MariaDbOptions {
  /** A folder of the caller's own (a small file system) for the data; removed by the caller. */
  dir?: string;
  /** Server settings added to the defaults, given at install and at every start. */
  args?: string[];
}

export class MariaDbServer {
  readonly dir: string;
  readonly port: number;
  readonly #args: string[];
  readonly #ownsDir: boolean;
  #child?: ChildProcess;

  private constructor(dir: string, port: number, args: string[], ownsDir: boolean) {
    this.dir = dir;
    this.port = port;
    this.#args = args;
    this.#ownsDir = ownsDir;
  }

  /** The running mariadbd's process id (a bench reads its CPU time). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** URL of a database on this server (the database is created). */
  async database(name: string): Promise<string> {
    const conn = await createConnection({ host: '127.0.0.1', port: this.port, user: 'app', password: 'app' });
    await conn.query(`create database if not exists ${name}`);
    await conn.end();
    return `mysql://app:app@127.0.0.1:${this.port}/${name}`;
  }

  static async create(opts: MariaDbOptions = {}): Promise<MariaDbServer> {
    const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'mariadb-test-'));
    const args = opts.args ?? [];
    const asRoot = process.getuid?.() === 0;
    if (asRoot) chownSync(dir, uidOf('mysql'), uidOf('mysql'));
    execFileSync(
      'mariadb-install-db',
      [...(asRoot ? ['--user=mysql'] : []), `--datadir=${dir}/data`, '--auth-root-authentication-method=normal', '--skip-test-db', ...args],
      { stdio: 'ignore' },
    );
    const server = new MariaDbServer(dir, await freePort(), args, !opts.dir);
    try {
      await server.start();
      const conn = await createConnection({ socketPath: `${dir}/sock`, user: 'root' });
      await conn.query("CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'");
      await conn.query("GRANT ALL ON *.* TO 'app'@'127.0.0.1'");
      await conn.end();
      return server;
    } catch (err) {
      await server.destroy();
      throw err;
    }
  }

  async start(): Promise<void> {
    const asRoot = process.getuid?.() === 0;
    this.#child = spawn(
      'mariadbd',
      [
        '--no-defaults',
        ...(asRoot ? ['--user=mysql'] : []),
        `--datadir=${this.dir}/data`,
        `--socket=${this.dir}/sock`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--pid-file=${this.dir}/pid`,
        '--skip-name-resolve',
        '--innodb-flush-log-at-trx-commit=2',
        ...this.#args,
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 200; i++) {
      try {
        const conn = await createConnection({ socketPath: `${this.dir}/sock`, user: 'root' });
        await conn.end();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error('MariaDB did not start');
  }

  /** Stops the server (SIGTERM, or SIGKILL for a crash) and waits for it to exit. */
  /** Whether mariadbd still runs (it aborts by itself in some faults, as InnoDB does on a full disk). */
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
    this.#child = undefined;
  }

  async destroy(): Promise<void> {
    await this.stop();
    if (this.#ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

export function uidOf(user: string): number {
  return Number(execFileSync('id', ['-u', user]).toString().trim());
}
