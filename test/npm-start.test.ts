/**
 * `npm start` stopped with SIGTERM stops the server too (issue 49): npm hands the signal to the
 * shell that runs the script, so the script must replace that shell with the server (`exec`);
 * otherwise the shell dies and the server runs on, orphaned, holding the port.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { rootDir } from '../core/config.ts';
import { freePort } from './mariadb-server.ts';

/** The processes whose parent is `pid`, read from /proc. */
function childrenOf(pid: number): number[] {
  const stat = (p: string) => readFileSync(`/proc/${p}/stat`, 'utf8');
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        // The parent id is the 4th field, after the command name in parentheses.
        return (
          Number(
            stat(p)
              .slice(stat(p).lastIndexOf(')') + 2)
              .split(' ')[1],
          ) === pid
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

t.test('SIGTERM to npm start stops the server process', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const npm = spawn('npm', ['start'], {
    cwd: rootDir,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${join(dir, 'db.sqlite')}`,
      API_KEY: 'k'.repeat(32),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Whatever happens, nothing this test started outlives it.
  let server: number | undefined;
  t.teardown(() => {
    for (const pid of [npm.pid, server]) if (pid && existsSync(`/proc/${pid}`)) process.kill(pid, 'SIGKILL');
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    npm.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(`127.0.0.1:${port}`)) resolve();
    });
    npm.once('exit', (code) => reject(new Error(`npm start ended (${code}) before listening: ${out}`)));
  });
  const [shellOrServer] = childrenOf(npm.pid!);
  t.ok(shellOrServer, 'npm runs the script in a child');
  // With `exec` the child is the server; without, the server is the shell's child.
  server = childrenOf(shellOrServer!)[0] ?? shellOrServer;
  t.match(readFileSync(`/proc/${server}/cmdline`, 'utf8'), /core\/server\.js/, 'the server process found');

  // npm has ended and its stdout is closed: the server holds that pipe too, so it closes only when every process of npm start is gone.
  const closed = new Promise<boolean>((resolve) => npm.once('close', () => resolve(true)));
  const limit = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 15_000).unref());
  npm.kill('SIGTERM');
  t.ok(await Promise.race([closed, limit]), 'every process of npm start has ended');
  t.notOk(existsSync(`/proc/${server}`), 'the server process is gone');
});
