/**
 * The archive's tar writer (core/archive/tar-gz.ts): parts of any size, empty ones and names longer
 * than a tar header holds come out of a standard reader as they went in.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as tar from 'tar';
import { writeTarGz } from '../core/archive/tar-gz.ts';
import { scratchDir } from './helper.ts';

t.test('every part comes out of the archive byte for byte, in order', async (t) => {
  const dir = scratchDir(t);
  const parts: Record<string, Buffer> = {
    'manifest.json': Buffer.from('{}\n'),
    'tables/empty.jsonl': Buffer.alloc(0),
    // Several reads of the writer's buffer, and not a whole number of tar blocks.
    'tables/big.jsonl': randomBytes(3 * 64 * 1024 + 700),
    [`files/store/images/${'a'.repeat(150)}.png`]: randomBytes(512),
  };
  for (const [path, bytes] of Object.entries(parts)) {
    mkdirSync(dirname(join(dir, 'in', path)), { recursive: true });
    writeFileSync(join(dir, 'in', path), bytes);
  }
  const file = join(dir, 'archive.tar.gz');
  await writeTarGz(join(dir, 'in'), Object.keys(parts), file);
  const listed: string[] = [];
  await tar.list({ file, strict: true, onReadEntry: (e) => void listed.push(e.path) });
  t.same(listed, Object.keys(parts));
  mkdirSync(join(dir, 'out'));
  await tar.extract({ file, cwd: join(dir, 'out'), strict: true });
  for (const [path, bytes] of Object.entries(parts)) t.ok(readFileSync(join(dir, 'out', path)).equals(bytes), path);
});

t.test('a part that cannot be read leaves the error, not a hang', async (t) => {
  const dir = scratchDir(t);
  await t.rejects(writeTarGz(dir, ['missing.jsonl'], join(dir, 'archive.tar.gz')), { code: 'ENOENT' });
});
