/**
 * `npm run export`: every table and file the host and its running features own (hook.ts), from one
 * consistent snapshot (snapshot.ts), written as one gzipped tar (docs/export-format.md). Each table
 * streams to a JSON-lines part of its own, so memory stays flat whatever the database's size.
 */
import { createHash, type Hash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { dirname, join } from 'node:path';
import type { DatabaseUrl } from '../db/url.ts';
import type { ArchiveOwner } from './hook.ts';
import type { AnyTable } from './feature-archive.ts';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION, ArchiveRefused, digest, type FilePart, type Manifest, type Part, type TablePart } from './format.ts';
import { openSnapshot, type Snapshot } from './snapshot.ts';
import { writeTarGz } from './tar-gz.ts';

/** Told how far the export is: rows written of all, and the table being written. */
export type Progress = (done: number, total: number, what: string) => void;

/** Lines gathered before a write: fewer, bigger writes, still a bounded amount in memory. */
const CHUNK_BYTES = 64 * 1024;

/** The part's bytes, counted and hashed as they go by, so the part is never read back to check it. */
interface Tally {
  bytes: number;
  hash: Hash;
}

async function* lines(snapshot: Snapshot, table: AnyTable, tally: Tally, onRow: () => void): AsyncGenerator<Buffer> {
  let chunk = '';
  const flush = (): Buffer => {
    const bytes = Buffer.from(chunk);
    tally.hash.update(bytes);
    tally.bytes += bytes.length;
    chunk = '';
    return bytes;
  };
  for await (const row of snapshot.rows(table)) {
    // Read through the table's description: the same types whichever database gave the row.
    chunk += `${JSON.stringify(table.fromArray(row))}\n`;
    onRow();
    if (chunk.length >= CHUNK_BYTES) yield flush();
  }
  if (chunk) yield flush();
}

async function writeTable(snapshot: Snapshot, dir: string, feature: string, table: AnyTable, onRow: () => void): Promise<TablePart> {
  const path = `tables/${table.tableName}.jsonl`;
  const tally: Tally = { bytes: 0, hash: createHash('sha256') };
  let rows = 0;
  // One chunk waits between the rows and the file: the reader stops while the disk lags.
  await pipeline(
    Readable.from(
      lines(snapshot, table, tally, () => {
        rows++;
        onRow();
      }),
      { highWaterMark: 1 },
    ),
    createWriteStream(join(dir, path)),
  );
  return {
    kind: 'table',
    path,
    feature,
    table: table.tableName,
    columns: Object.keys(table.options.properties),
    rows,
    bytes: tally.bytes,
    sha256: tally.hash.digest('hex'),
  };
}

async function copyFolder(dir: string, feature: string, folder: string, from: string): Promise<FilePart[]> {
  const names = await readdir(from).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : Promise.reject(err)));
  const parts: FilePart[] = [];
  for (const name of names.sort()) {
    // Files only: a half-written upload (`.part`) is not one yet.
    if (name.endsWith('.part')) continue;
    const path = `files/${feature}/${folder}/${name}`;
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await copyFile(join(from, name), join(dir, path));
    parts.push({ kind: 'file', path, feature, folder, name, ...(await digest(join(dir, path))) });
  }
  return parts;
}

function utcNow(): string {
  return new Date().toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * Writes the archive to `file` (through a temporary name, so a failed export leaves no half file).
 * `migrations`: every migration this version and its features define; a database that lacks one
 * has not the tables the features describe, and is refused before anything is read.
 */
export async function exportArchive(target: DatabaseUrl, owners: ArchiveOwner[], migrations: string[], file: string, progress?: Progress): Promise<Manifest> {
  await mkdir(dirname(file), { recursive: true });
  const dir = await mkdtemp(join(dirname(file), '.export-'));
  let snapshot: Snapshot | undefined = await openSnapshot(target);
  try {
    const applied = new Set(await snapshot.migrations().catch(() => []));
    const lacking = migrations.filter((m) => !applied.has(m));
    if (lacking.length) {
      throw new ArchiveRefused(`The database lacks ${lacking.length} migrations of this version (${lacking[0]}…): run npm run migrate, then export.`);
    }
    await mkdir(join(dir, 'tables'));
    const tables = owners.flatMap((o) => o.tables.map((table) => ({ feature: o.name, table })));
    let total = 0;
    for (const { table } of tables) total += await snapshot.count(table);
    const parts: Part[] = [];
    let done = 0;
    for (const { feature, table } of tables) {
      parts.push(await writeTable(snapshot, dir, feature, table, () => progress?.(++done, total, table.tableName)));
    }
    const manifest: Manifest = {
      format: ARCHIVE_FORMAT,
      version: ARCHIVE_VERSION,
      createdAt: utcNow(),
      source: { dialect: target.dialect },
      migrations: await snapshot.migrations(),
      parts,
    };
    await snapshot.close();
    snapshot = undefined;
    for (const owner of owners) {
      for (const [folder, from] of Object.entries(owner.folders)) parts.push(...(await copyFolder(dir, owner.name, folder, from)));
    }
    await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const partial = `${file}.partial`;
    // The manifest first, so a reader knows what follows before it reads it.
    await writeTarGz(dir, ['manifest.json', ...parts.map((p) => p.path)], partial);
    await rename(partial, file);
    return manifest;
  } finally {
    await snapshot?.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
