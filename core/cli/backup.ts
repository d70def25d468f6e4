/**
 * Backups of the database named by DATABASE_URL (or the config):
 *   npm run backup [-- FILE]   SQLite: an online copy while the server keeps serving (SQLite's
 *                              backup API); MySQL/MariaDB: a consistent dump by the database's own
 *                              tool (mariadb-dump or mysqldump, --single-transaction).
 *   npm run restore -- FILE    puts a backup back; refused while a server has the database open
 *                              (core/server-mark.ts), since it would replace the tables under it.
 * Without FILE a backup goes to backups/<database>-<UTC time>.(sqlite|sql).
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { DatabaseSync, backup as sqliteBackup } from 'node:sqlite';
import { pipeline } from 'node:stream/promises';
import { ConfigError, loadConfig } from '../config.ts';
import { parseDatabaseUrl, type DatabaseUrl } from '../db/url.ts';
import { serverHasOpen } from '../server-mark.ts';
import { commandLine, usage } from './args.ts';

class UsageError extends Error {}

const USAGE = 'usage: npm run backup [-- FILE] | npm run restore -- FILE';
const {
  positionals: [command, fileArg, ...extra],
} = commandLine(USAGE, {});
if (!(command === 'backup' || (command === 'restore' && fileArg)) || extra.length) usage(USAGE);

try {
  const target = parseDatabaseUrl(loadConfig().database.url);
  if (command === 'backup') {
    const file = resolve(fileArg ?? defaultBackupFile(target));
    mkdirSync(dirname(file), { recursive: true });
    if (target.dialect === 'sqlite') await backupSqlite(target.file!, file);
    else await backupMysql(target, file);
    console.log(`Backed up to ${file}`);
  } else {
    const file = resolve(fileArg!);
    if (!existsSync(file)) throw new UsageError(`No backup file at ${file}.`);
    if (await serverHasOpen(target)) throw new Error('A server has this database open: stop it, then restore.');
    if (target.dialect === 'sqlite') await restoreSqlite(file, target.file!);
    else await restoreMysql(target, file);
    console.log(`Restored from ${file}`);
  }
} catch (err) {
  console.error(err instanceof ConfigError ? `Cannot ${command}: ${err.message}` : (err as Error).message);
  process.exitCode = err instanceof UsageError ? 2 : 1;
}

function defaultBackupFile(target: DatabaseUrl): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const name = target.dialect === 'sqlite' ? basename(target.file!).replace(/\.[^.]*$/, '') : target.dbName!;
  return `backups/${name}-${stamp}.${target.dialect === 'sqlite' ? 'sqlite' : 'sql'}`;
}

function inMemory(file: string): void {
  if (file === ':memory:') throw new UsageError('An in-memory database has nothing to back up or restore.');
}

async function backupSqlite(dbFile: string, file: string): Promise<void> {
  inMemory(dbFile);
  if (!existsSync(dbFile)) throw new UsageError(`No database at ${dbFile}.`);
  // A connection of its own: the backup API copies page by page and restarts when the server
  // writes in between, so the copy is one consistent moment without stopping the server.
  const source = new DatabaseSync(dbFile);
  try {
    source.exec('pragma busy_timeout = 5000');
    rmSync(file, { force: true });
    await sqliteBackup(source, file);
  } finally {
    source.close();
  }
}

async function restoreSqlite(file: string, dbFile: string): Promise<void> {
  inMemory(dbFile);
  const source = new DatabaseSync(file, { readOnly: true });
  try {
    let sound = false;
    try {
      const [check] = source.prepare('pragma integrity_check').all() as { integrity_check: string }[];
      sound = check?.integrity_check === 'ok';
    } catch {
      // not a SQLite file at all: refused below like a damaged one
    }
    if (!sound) throw new UsageError(`${file} is not a sound SQLite backup.`);
    // The database's own files go, journal and WAL included, so no page of the old one survives.
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(dbFile + suffix, { force: true });
    mkdirSync(dirname(resolve(dbFile)), { recursive: true });
    await sqliteBackup(source, dbFile);
  } finally {
    source.close();
  }
}

/** Connection arguments for the MySQL client tools; the password travels in the environment, never in argv. */
function mysqlArgs(target: DatabaseUrl): { args: string[]; env: NodeJS.ProcessEnv } {
  const u = new URL(target.url!);
  const args = [`--host=${u.hostname}`, `--port=${u.port || '3306'}`, `--user=${decodeURIComponent(u.username)}`];
  return { args, env: { ...process.env, MYSQL_PWD: decodeURIComponent(u.password) } };
}

/** The first of the tools that is installed (MariaDB ships `mariadb-dump`, MySQL `mysqldump`). */
async function tool(names: string[]): Promise<string> {
  for (const name of names) {
    const found = await new Promise<boolean>((done) => {
      const p = spawn(name, ['--version'], { stdio: 'ignore' });
      p.once('error', () => done(false));
      p.once('exit', (code) => done(code === 0));
    });
    if (found) return name;
  }
  throw new UsageError(`Neither ${names.join(' nor ')} is installed; install the MariaDB or MySQL client tools.`);
}

async function runTool(cmd: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string, stdout?: string): Promise<void> {
  const child = spawn(cmd, args, { env, stdio: [stdin ? 'pipe' : 'ignore', stdout ? 'pipe' : 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('exit', done);
  });
  await Promise.all([
    stdin ? pipeline(createReadStream(stdin), child.stdin!) : undefined,
    stdout ? pipeline(child.stdout!, createWriteStream(stdout)) : undefined,
  ]);
  const code = await exited;
  if (code !== 0) throw new Error(`${cmd} failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
}

async function backupMysql(target: DatabaseUrl, file: string): Promise<void> {
  const dump = await tool(['mariadb-dump', 'mysqldump']);
  const { args, env } = mysqlArgs(target);
  // --single-transaction: one consistent snapshot of InnoDB tables without locking out writers.
  const flags = ['--single-transaction', '--quick', '--routines', '--triggers', '--no-tablespaces', '--skip-lock-tables'];
  try {
    await runTool(dump, [...args, ...flags, target.dbName!], env, undefined, file);
  } catch (err) {
    rmSync(file, { force: true });
    throw err;
  }
}

async function restoreMysql(target: DatabaseUrl, file: string): Promise<void> {
  const client = await tool(['mariadb', 'mysql']);
  const { args, env } = mysqlArgs(target);
  await runTool(client, [...args, target.dbName!], env, file);
}
