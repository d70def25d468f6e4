/**
 * What a feature gives the archive (`npm run export`, `npm run import`, docs/export-format.md): its
 * tables and the folders of files it keeps. A feature that says nothing gets every table of its
 * entities, so a third-party feature's data travels without it knowing about archives.
 */
import type { Table } from '../table.ts';

// biome-ignore lint/suspicious/noExplicitAny: a table of any shape
export type AnyTable = Table<any>;

export interface FeatureArchive<O = unknown> {
  /** The tables whose rows are the feature's data, written whole; default: every table of its `entities`. */
  tables?: AnyTable[];
  /**
   * Folders of files the feature keeps (product images), each under a name of its own, from its
   * options and where the database is (a SQLite file); their files travel as parts too.
   */
  folders?(options: O, where: { databaseFile?: string }): Record<string, string>;
}
