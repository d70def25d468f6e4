/**
 * `npm run import -- FILE`: puts an archive of ours (export.ts) into an empty install, on either
 * database: the same rows with the same ids, the same files. Every part's checksum, the format's
 * version and the migrations are checked before anything is written; tables stream in batches.
 */
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import * as tar from 'tar';
import type { Database } from '../db.ts';
import { count, fields, sql } from '../sql.ts';
import type { AnyTable } from './feature-archive.ts';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION, ArchiveRefused, digest, READ_BYTES, type FilePart, type Manifest, type TablePart } from './format.ts';
import type { ArchiveOwner } from './hook.ts';

/** A refusal of an import: nothing is written. */
export class ImportRefused extends ArchiveRefused {}

/** Values bound per insert statement, below what either database takes in one. */
const VALUES_PER_BATCH = 10_000;

async function readManifest(dir: string): Promise<Manifest> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    throw new ImportRefused('The file is not an archive of this server: it has no readable manifest.json.');
  }
  if (manifest.format !== ARCHIVE_FORMAT) throw new ImportRefused('The file is not an archive of this server (its manifest names another format).');
  if (manifest.version > ARCHIVE_VERSION) {
    throw new ImportRefused(`The archive is of format version ${manifest.version}; this server reads up to ${ARCHIVE_VERSION}: update it first.`);
  }
  for (const part of manifest.parts) {
    const seen = await digest(join(dir, part.path)).catch(() => undefined);
    if (seen?.sha256 !== part.sha256) throw new ImportRefused(`The archive is damaged: ${part.path} ${seen ? 'does not match its checksum' : 'is missing'}.`);
  }
  return manifest;
}

/** Which of the install's tables each table part goes to; a part no running feature owns is refused, naming its feature. */
function destinations(manifest: Manifest, owners: ArchiveOwner[]): Map<TablePart, AnyTable> {
  const byName = new Map(owners.flatMap((o) => o.tables.map((t) => [t.tableName, t] as const)));
  const out = new Map<TablePart, AnyTable>();
  for (const part of manifest.parts) {
    if (part.kind !== 'table') continue;
    const table = byName.get(part.table);
    if (!table)
      throw new ImportRefused(`The archive holds ${part.table} of the "${part.feature}" feature, which this install does not run: enable or install it first.`);
    const missing = part.columns.filter((c) => !(c in table.options.properties));
    if (missing.length) throw new ImportRefused(`${part.table} in the archive has columns this install lacks (${missing.join(', ')}).`);
    out.set(part, table);
  }
  return out;
}

/** Where each file part goes; checked before anything is written. */
function fileDestinations(manifest: Manifest, owners: ArchiveOwner[]): [FilePart, string][] {
  const out: [FilePart, string][] = [];
  for (const part of manifest.parts) {
    if (part.kind !== 'file') continue;
    const folder = owners.find((o) => o.name === part.feature)?.folders[part.folder];
    if (!folder) throw new ImportRefused(`The archive holds files of ${part.feature}'s ${part.folder}, which this install does not keep.`);
    // A name is one file in the folder: a crafted one must not reach outside it.
    if (basename(part.name) !== part.name || part.name.startsWith('.'))
      throw new ImportRefused(`The archive names a file "${part.name}" that is not a plain file name.`);
    out.push([part, folder]);
  }
  return out;
}

async function checkTarget(db: Database, manifest: Manifest, owners: ArchiveOwner[], tables: Iterable<AnyTable>): Promise<void> {
  const applied = new Set(db.migrationNames);
  const differ = manifest.migrations.filter((m) => !applied.has(m)).concat(db.migrationNames.filter((m) => !manifest.migrations.includes(m)));
  if (differ.length) {
    throw new ImportRefused(
      `The archive and this install differ in their migrations (${differ.slice(0, 3).join(', ')}…): run the same version and features as the source.`,
    );
  }
  const everyTable = new Set([...tables, ...owners.flatMap((o) => o.tables)]);
  for (const table of everyTable) {
    const [row] = await db.query(sql`select ${fields({ n: count() })} from ${table}`);
    if (Number(row?.n) > 0) throw new ImportRefused(`This install is not empty (${table.tableName} has ${row!.n} rows): import only into a new database.`);
  }
}

async function* batches(file: string, size: number): AsyncGenerator<Record<string, unknown>[]> {
  let batch: Record<string, unknown>[] = [];
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY })) {
    if (!line) continue;
    batch.push(JSON.parse(line) as Record<string, unknown>);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/**
 * Foreign keys are checked by neither database while the rows go in: a table's rows may point at a
 * table that comes later, or at rows of their own table further on. The source held them whole.
 */
async function withoutForeignKeys<T>(db: Database, fn: (batch: (work: () => Promise<void>) => Promise<void>) => Promise<T>): Promise<T> {
  if (db.dialect === 'sqlite') {
    await db.unchecked.run('pragma foreign_keys = off');
    try {
      return await fn((work) => db.transaction(work));
    } finally {
      await db.unchecked.run('pragma foreign_keys = on');
    }
  }
  // On MySQL the setting is the connection's: set and put back inside each transaction, whichever pooled connection it has.
  return fn((work) =>
    db.transaction(async () => {
      await db.unchecked.run('set foreign_key_checks = 0');
      await work();
      await db.unchecked.run('set foreign_key_checks = 1');
    }),
  );
}

export interface ImportResult {
  manifest: Manifest;
  rows: number;
  files: number;
}

export async function importArchive(
  db: Database,
  owners: ArchiveOwner[],
  file: string,
  progress?: (done: number, total: number, what: string) => void,
): Promise<ImportResult> {
  const dir = await mkdtemp(join(dirname(file), '.import-'));
  try {
    try {
      // node-tar reads 16 MiB at a time by default, each read a new buffer: on a big archive they
      // piled up outside V8's heap, and the import's peak grew with the data (docs/performance.md).
      await tar.extract({ file, cwd: dir, strict: true, maxReadSize: READ_BYTES });
    } catch {
      throw new ImportRefused(`${file} is not a readable archive (a gzipped tar written by npm run export).`);
    }
    const manifest = await readManifest(dir);
    const tables = destinations(manifest, owners);
    const fileParts = fileDestinations(manifest, owners);
    await checkTarget(db, manifest, owners, tables.values());
    const total = manifest.parts.reduce((n, p) => n + (p.kind === 'table' ? p.rows : 0), 0);
    let rows = 0;
    await withoutForeignKeys(db, async (inBatch) => {
      for (const [part, table] of tables) {
        const size = Math.max(1, Math.floor(VALUES_PER_BATCH / table.width));
        for await (const batch of batches(join(dir, part.path), size)) {
          await inBatch(() => table.insertMany(db, batch));
          rows += batch.length;
          progress?.(rows, total, part.table);
        }
      }
    });
    for (const [part, folder] of fileParts) {
      await mkdir(folder, { recursive: true });
      await copyFile(join(dir, part.path), join(folder, part.name));
    }
    return { manifest, rows, files: fileParts.length };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
