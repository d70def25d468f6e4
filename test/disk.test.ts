/**
 * The embedded database on a small file system of its own (tmpfs): a full disk answers 503 with
 * Retry-After and writes nothing, and the server serves again by itself once space is back.
 * Mounting needs root (CI runs as root); elsewhere the test is skipped and says why.
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, call, onMysql } from './helper.ts';
import { newUser } from './fixtures.ts';

/** A 3 MB file system of the test's own, or undefined where this process may not mount one. */
function smallDisk(): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'disk-test-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

function unmountAtEnd(t: Test, dir: string): void {
  t.teardown(() => {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  });
}

/** Fills the file system to the last byte; returns the filler, to remove when space should come back. */
function fill(dir: string): string {
  const filler = join(dir, 'filler');
  const chunk = Buffer.alloc(64 * 1024, 1);
  let written = Buffer.alloc(0);
  for (;;) {
    try {
      writeFileSync(filler, Buffer.concat([written, chunk]));
      written = Buffer.concat([written, chunk]);
    } catch {
      break;
    }
  }
  // Smaller pieces, until not even 1 KiB fits.
  for (const size of [16 * 1024, 1024]) {
    for (;;) {
      try {
        writeFileSync(filler, Buffer.concat([written, Buffer.alloc(size, 1)]));
        written = Buffer.concat([written, Buffer.alloc(size, 1)]);
      } catch {
        writeFileSync(filler, written);
        break;
      }
    }
  }
  return filler;
}

const dir = onMysql ? undefined : smallDisk();
const skip = onMysql ? 'SQLite on a small file system' : !dir && 'cannot mount a tmpfs here (needs root)';

t.test('a full disk: 503 and nothing written, then serving again by itself', { skip }, async (t) => {
  unmountAtEnd(t, dir!);
  const app = await build(t, { databaseUrl: `sqlite:${join(dir!, 'db.sqlite')}`, features: ['users', 'credits'] });
  await newUser(app, 'Steve', { cents: 1000 });
  const add = () => call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '1.00' }, as: 'urlencoded' });
  t.equal((await add()).statusCode, 200);

  const filler = fill(dir!);
  let refused = 0;
  // The WAL may still have room for a few rows: write until the disk says no.
  for (let i = 0; i < 200; i++) {
    const res = await add();
    if (res.statusCode === 200) continue;
    t.equal(res.statusCode, 503, res.body);
    // The game plugin calls this route: `error` is its general code, ours is in `code` (docs/clients.md).
    t.match(res.json(), { status: false, error: 'USER_NOT_FOUND', code: 'SERVICE_UNAVAILABLE' });
    t.ok(res.headers['retry-after'], 'Retry-After');
    refused++;
    if (refused === 3) break;
  }
  t.equal(refused, 3, 'writes are refused while the disk is full');
  const balance = (await call(app, '/api/credits?username=Steve')).json().raw_credits;
  t.equal((await call(app, '/health')).statusCode, 200, 'reads and /health still answer');

  rmSync(filler);
  const res = await add();
  t.equal(res.statusCode, 200, `serving again once space is back: ${res.body}`);
  t.equal((await call(app, '/api/credits?username=Steve')).json().raw_credits, balance + 1, 'exactly the one new credit: nothing half-written before');
  const [sum] = await app.db.query<{ s: number }>('select sum(delta) as s from credits_ledger');
  t.equal(Number(sum!.s) / 100, balance + 1, 'the ledger agrees with the balance');
});
