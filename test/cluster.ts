/**
 * The multi-machine shape on one machine, for the cluster fault test: a 3-node MariaDB Galera
 * cluster on loopback ports, and HAProxy in front of it and of the server instances. Both are
 * started from the configuration files docs/deployment.md shows (docs/deployment/), each node and
 * HAProxy is a child process of the test, stopped by its pid, and their files live in one
 * temporary folder removed at the end.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { rootDir } from '../core/config.ts';
import { uidOf } from './mariadb-server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Debian's galera-4; docs/deployment/galera.cnf names the same path. */
const GALERA = '/usr/lib/galera/libgalera_smm.so';

export function haveCluster(): boolean {
  try {
    execFileSync('mariadbd', ['--version'], { stdio: 'ignore' });
    execFileSync('haproxy', ['-v'], { stdio: 'ignore' });
    // A joining node receives the state through rsync (galera.cnf's wsrep_sst_method).
    execFileSync('rsync', ['--version'], { stdio: 'ignore' });
    return existsSync(GALERA);
  } catch {
    return false;
  }
}

/** A file of docs/deployment/ with its `{{name}}` values filled in; a value left unnamed is an error. */
export function fillTemplate(file: string, values: Record<string, string | number>): string {
  return readFileSync(join(rootDir, 'docs/deployment', file), 'utf8').replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`${file}: no value for {{${name}}}`);
    return String(values[name]);
  });
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** `count` consecutive loopback ports nothing listens on now (Galera takes a node's three in a row). */
export async function freePorts(count: number): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    // Below Linux's ephemeral range (32768 up), which outgoing connections and port 0 draw from.
    const base = 20000 + Math.floor(Math.random() * 12000);
    let ok = true;
    for (let p = base; ok && p < base + count; p++) ok = await portFree(p);
    if (ok) return base;
  }
  throw new Error(`no ${count} consecutive free ports`);
}

/** Runs `fn` with a root connection over a node's socket. */
async function asRoot<T>(socket: string, fn: (conn: Awaited<ReturnType<typeof createConnection>>) => Promise<T>): Promise<T> {
  const conn = await createConnection({ socketPath: socket, user: 'root' });
  try {
    return await fn(conn);
  } finally {
    await conn.end();
  }
}

interface Node {
  dir: string;
  /** The SQL port; Galera's group communication, IST and SST take the three after it. */
  port: number;
  child?: ChildProcess;
}

/** Server settings that keep three nodes small on a shared test machine; not part of the operator's file. */
const SMALL = ['--innodb-buffer-pool-size=64M', '--innodb-log-file-size=16M', '--innodb-flush-log-at-trx-commit=2', '--max-connections=300'];

/** Three mariadbd processes forming one Galera cluster on loopback, from docs/deployment/galera.cnf. */
export class GaleraCluster {
  readonly dir: string;
  readonly nodes: Node[];

  private constructor(dir: string, nodes: Node[]) {
    this.dir = dir;
    this.nodes = nodes;
  }

  /** Starts the cluster: the first node makes it, the other two join it; resolves once all three are synced. */
  static async start(size = 3): Promise<GaleraCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'galera-'));
    const nodes: Node[] = [];
    for (let i = 0; i < size; i++) nodes.push({ dir: join(dir, `node${i + 1}`), port: await freePorts(4) });
    const cluster = new GaleraCluster(dir, nodes);
    try {
      const asRootUser = process.getuid?.() === 0;
      if (asRootUser) chownSync(dir, uidOf('mysql'), uidOf('mysql'));
      const peers = nodes.map((n) => `127.0.0.1:${n.port + 1}`).join(',');
      for (const [i, node] of nodes.entries()) {
        mkdirSync(node.dir);
        writeFileSync(
          join(node.dir, 'my.cnf'),
          fillTemplate('galera.cnf', {
            datadir: join(node.dir, 'data'),
            socket: join(node.dir, 'sock'),
            pidfile: join(node.dir, 'pid'),
            host: '127.0.0.1',
            port: node.port,
            gcomm: node.port + 1,
            ist: node.port + 2,
            sst: node.port + 3,
            cluster: 'test',
            peers,
          }),
        );
        if (asRootUser) chownSync(node.dir, uidOf('mysql'), uidOf('mysql'));
        // Only the first node is installed: the others receive its state when they join.
        if (i === 0)
          execFileSync(
            'mariadb-install-db',
            [
              `--defaults-file=${join(node.dir, 'my.cnf')}`,
              ...(asRootUser ? ['--user=mysql'] : []),
              '--auth-root-authentication-method=normal',
              '--skip-test-db',
              '--wsrep-on=OFF',
            ],
            { stdio: 'ignore' },
          );
        else mkdirSync(join(node.dir, 'data'));
        if (asRootUser) chownSync(join(node.dir, 'data'), uidOf('mysql'), uidOf('mysql'));
      }
      cluster.#spawn(0, ['--wsrep-new-cluster']);
      await cluster.#ready(0, 1);
      await asRoot(cluster.socket(0), async (conn) => {
        await conn.query("CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'");
        await conn.query("GRANT ALL ON *.* TO 'app'@'127.0.0.1'");
        // HAProxy's health check logs in as this user, without a password, and does nothing else.
        await conn.query("CREATE USER 'haproxy'@'127.0.0.1'");
      });
      // One joiner at a time: the first node is the donor of both state transfers.
      for (let i = 1; i < size; i++) {
        cluster.#spawn(i);
        await cluster.#ready(i, i + 1);
      }
      return cluster;
    } catch (err) {
      await cluster.destroy();
      throw err;
    }
  }

  socket(i: number): string {
    return join(this.nodes[i]!.dir, 'sock');
  }

  /** `host:port` of node i's SQL port. */
  address(i: number): string {
    return `127.0.0.1:${this.nodes[i]!.port}`;
  }

  /** URL of a database through node i (created, and so on every node). */
  async database(i: number, name: string): Promise<string> {
    await asRoot(this.socket(i), (conn) => conn.query(`create database if not exists ${name}`));
    return `mysql://app:app@${this.address(i)}/${name}`;
  }

  #spawn(i: number, args: string[] = []): void {
    const node = this.nodes[i]!;
    const log = openSync(join(node.dir, 'server.log'), 'a');
    node.child = spawn('mariadbd', [`--defaults-file=${join(node.dir, 'my.cnf')}`, ...(process.getuid?.() === 0 ? ['--user=mysql'] : []), ...SMALL, ...args], {
      stdio: ['ignore', log, log],
    });
    closeSync(log);
  }

  /** wsrep status of node i, by variable name. */
  async status(i: number): Promise<Record<string, string>> {
    return asRoot(this.socket(i), async (conn) => {
      const [rows] = await conn.query("show status like 'wsrep_%'");
      return Object.fromEntries((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value]));
    });
  }

  /** Waits until node i is synced and ready in a cluster of `size` nodes. */
  async #ready(i: number, size: number): Promise<void> {
    const deadline = Date.now() + 90_000;
    let last = 'not answering';
    while (Date.now() < deadline) {
      const child = this.nodes[i]!.child;
      if (child?.exitCode !== null) throw new Error(`node ${i + 1} exited (${join(this.nodes[i]!.dir, 'server.log')})`);
      try {
        const s = await this.status(i);
        if (s.wsrep_ready === 'ON' && Number(s.wsrep_cluster_size) === size && s.wsrep_local_state_comment === 'Synced') return;
        last = `ready ${s.wsrep_ready}, size ${s.wsrep_cluster_size}, ${s.wsrep_local_state_comment}`;
      } catch {
        /* still starting or receiving its state */
      }
      await sleep(200);
    }
    throw new Error(`node ${i + 1} did not join: ${last}`);
  }

  /** SIGKILLs node i and waits for it to exit: a database machine lost without warning. */
  async kill(i: number): Promise<void> {
    const child = this.nodes[i]!.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Stops every node by its pid (SIGKILL: the data goes with the folder) and removes the folder. */
  async destroy(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) await this.kill(i);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** HAProxy (Debian's) in the foreground, as a child of the test, from a generated configuration. */
export class HaProxy {
  readonly #child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /** Starts HAProxy on `config` (its text) and waits until `ready` resolves true. */
  static async start(dir: string, config: string, ready: () => Promise<boolean>): Promise<HaProxy> {
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, config);
    execFileSync('haproxy', ['-c', '-q', '-f', file]);
    const log = openSync(join(dir, 'haproxy.log'), 'a');
    // -db: stay in the foreground, so the pid the test holds is HAProxy's own.
    const proxy = new HaProxy(spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', log, log] }));
    closeSync(log);
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (proxy.#child.exitCode !== null) throw new Error(`haproxy exited with ${proxy.#child.exitCode}`);
      if (await ready().catch(() => false)) return proxy;
      await sleep(100);
    }
    await proxy.stop();
    throw new Error('haproxy did not become ready');
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }
}
