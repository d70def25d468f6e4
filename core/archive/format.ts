/** The archive's manifest, as docs/export-format.md describes it. */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

/** A refusal the operator can act on, said as one sentence; nothing is written. */
export class ArchiveRefused extends Error {}

export const ARCHIVE_FORMAT = 'community-platform-archive';
/** Raised when the layout changes in a way an older importer would misread. */
export const ARCHIVE_VERSION = 1;

export interface TablePart {
  kind: 'table';
  /** Path inside the archive: `tables/<table>.jsonl`. */
  path: string;
  feature: string;
  table: string;
  /** The properties every line holds, in the table's order. */
  columns: string[];
  rows: number;
  bytes: number;
  sha256: string;
}

export interface FilePart {
  kind: 'file';
  /** Path inside the archive: `files/<feature>/<folder>/<name>`. */
  path: string;
  feature: string;
  folder: string;
  name: string;
  bytes: number;
  sha256: string;
}

export type Part = TablePart | FilePart;

export interface Manifest {
  format: typeof ARCHIVE_FORMAT;
  version: number;
  /** UTC, `YYYY-MM-DD HH:MM:SS`. */
  createdAt: string;
  source: { dialect: 'sqlite' | 'mysql' };
  /** The migrations the source had applied: the importing install must have exactly these. */
  migrations: string[];
  parts: Part[];
}

/** How much of a file an archive's reader takes at a time (the tar writer, the checksums, the extraction). */
export const READ_BYTES = 64 * 1024;

/**
 * A file's size and sha256, read through one buffer used again and again: a stream's new buffer for
 * every read piles up outside V8's heap until a collection comes, which hashing rarely prompts.
 */
export async function digest(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(READ_BYTES);
  const handle = await open(file);
  let bytes = 0;
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (!bytesRead) break;
      hash.update(buf.subarray(0, bytesRead));
      bytes += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return { bytes, sha256: hash.digest('hex') };
}
