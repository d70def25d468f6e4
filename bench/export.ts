/**
 * `BENCH_ONLY=export npm run bench`: `npm run export` of a grown database, then `npm run import` of
 * its archive into an empty one, each's time and the peak resident memory of its process (read by
 * bench/export-rss.ts as it exits), so a bigger database shows whether both stay in bounded memory.
 * The database is migrated by the server's start, then grown in SQL: `BENCH_EXPORT_PLAYERS` players
 * (20,000 by default, a run of a minute or two; the figure is 100,000), ten ledger rows and
 * two orders with their line a player. The server keeps serving during the export, as an owner's
 * would, and /health is timed meanwhile; the import runs with no server, as it must.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { rootDir } from '../core/config.ts';
import { freePort } from '../test/mariadb-server.ts';
import { numbers, open } from './datasize.ts';
import { children, databases, onDatabases, pinned, LOAD_CORE, scriptArgs, startServer, stop } from './harness.ts';

const PLAYERS = Number(process.env.BENCH_EXPORT_PLAYERS ?? 20_000);
const OLD = '2025-06-01 12:00:00';

/** The players, their wallets and ledgers, and their orders with a line each, in SQL. */
async function grow(url: string): Promise<string> {
  const sql = await open(url);
  try {
    await sql.run('begin');
    await sql.run(
      `insert into users_accounts (username, username_key, email, email_key, is_verified, auth_status, creation_ip, creation_date)
      ${numbers} select concat('Filler', i), concat('filler', i), concat('filler', i, '@example.com'),
      concat('filler', i, '@example.com'), 1, 0, '10.9.0.1', ? from n`,
      [PLAYERS, OLD],
    );
    const { first } = (await sql.one('select min(id) as first from users_accounts')) as { first: number };
    await sql.run('insert into credits_wallets (user_id, balance) select id, 1000 from users_accounts');
    await sql.run(
      `insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at)
      ${numbers} select ? + i % ?, 100, 1000, 'grant', 'filler', null, null, ? from n`,
      [PLAYERS * 10, first, PLAYERS, OLD],
    );
    await sql.run(
      `insert into store_orders (account_id, type, status, subtotal, discount, total, earnings, cashback, credit, currency, payment_api, payment_id,
      creation_date)
      ${numbers} select ? + i % ?, 'payment', 'completed', 500, 0, 500, 500, 0, 0, 'USD', 'paypal', concat('filler-', i), ? from n`,
      [PLAYERS * 2, first, PLAYERS, OLD],
    );
    await sql.run(
      `insert into store_order_items (order_id, product_id, product_name, quantity, unit_price, unit_total, variables)
      select id, 0, 'Retired kit', 1, 500, 500, '{}' from store_orders`,
    );
    await sql.run('commit');
  } finally {
    await sql.close();
  }
  return counted(url);
}

/** The grown tables' rows, as the table shows them: the imported database must read the same. */
async function counted(url: string): Promise<string> {
  const sql = await open(url);
  try {
    const counts = await sql.one(`select (select count(*) from users_accounts) as players, (select count(*) from credits_ledger) as ledger,
      (select count(*) from store_orders) as orders`);
    return Object.entries(counts)
      .map(([k, v]) => `${Number(v).toLocaleString('en')} ${k}`)
      .join(', ');
  } finally {
    await sql.close();
  }
}

/** `npm run export -- FILE` or `npm run import -- FILE` (its Node flags too) in a process of its own: how long it took and its peak RSS, in MiB. */
async function archiveOnce(command: 'export' | 'import', url: string, file: string): Promise<{ ms: number; peakMiB: number }> {
  const started = performance.now();
  const args = ['--import', './bench/export-rss.ts', ...scriptArgs(command), file];
  const [cmd, ...rest] = pinned ? ['taskset', '-c', String(LOAD_CORE), process.execPath, ...args] : [process.execPath, ...args];
  const child = spawn(cmd!, rest, { cwd: rootDir, env: { ...process.env, DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  children.delete(child);
  if (code !== 0) throw new Error(`npm run ${command} exited with ${code}: ${out}`);
  const kib = Number(/BENCH_MAX_RSS_KIB (\d+)/.exec(out)?.[1] ?? Number.NaN);
  return { ms: performance.now() - started, peakMiB: Math.round(kib / 1024) };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** /health's answers while the export runs: how many, and the slowest, in ms. */
function healthWhile(port: number): { stop: () => Promise<{ count: number; slowest: number }> } {
  let running = true;
  let count = 0;
  let slowest = 0;
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.arrayBuffer());
      slowest = Math.max(slowest, performance.now() - at);
      count++;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { count, slowest: Math.round(slowest) };
    },
  };
}

export async function runExport(): Promise<void> {
  const lines: string[] = [];
  for (const kind of databases)
    await onDatabases(kind, 2, async ([url, empty], name, version) => {
      const port = await freePort();
      const env = { DATABASE_URL: url!, PORT: String(port), HOST: '127.0.0.1', API_KEY: randomBytes(24).toString('hex') };
      let server = (await startServer(env)).proc;
      await stop(server);
      const grown = await grow(url!);
      const dir = mkdtempSync(join(tmpdir(), 'bench-export-'));
      try {
        server = (await startServer(env)).proc;
        const health = healthWhile(port);
        const archive = join(dir, 'export.tar.gz');
        const exported = await archiveOnce('export', url!, archive);
        const served = await health.stop();
        const size = (statSync(archive).size / 2 ** 20).toFixed(1);
        const imported = await archiveOnce('import', empty!, archive);
        const after = await counted(empty!);
        if (after !== grown) throw new Error(`the import holds ${after}, the exported database ${grown}`);
        lines.push(
          `| ${name} (${version}) | ${grown} | ${seconds(exported.ms)} | **${exported.peakMiB} MiB** | ${size} MiB | ${served.count} answers, slowest ` +
            `${served.slowest} ms | ${seconds(imported.ms)} | **${imported.peakMiB} MiB** |`,
        );
        console.log(lines.at(-1));
      } finally {
        await stop(server);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  console.log(`
# Export and import: ${when} UTC

| database | grown to | export time | peak RSS of the export | archive | /health meanwhile | import time | peak RSS of the import |
|---|---|---|---|---|---|---|---|
${lines.join('\n')}
`);
}
