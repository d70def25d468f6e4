/** The archive's manifest, as docs/export-format.md describes it. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

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

/** A file's size and sha256, read as a stream. */
export async function digest(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}
