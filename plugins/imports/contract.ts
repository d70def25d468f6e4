/** The imports feature's contract: bringing a community in from another store (LeaderOS, Tebex, CraftingStore). */
import { createServiceRef } from '../../core/registry.ts';

export interface ImportReport {
  source: string;
  dryRun: boolean;
  /** By kind: how many were brought in this run (in a dry run: would be). */
  created: Record<string, number>;
  /** By kind: how many an earlier run had brought already. */
  skipped: Record<string, number>;
  /** What could not be brought, one sentence each. */
  notBrought: string[];
}

export interface LeaderOsSource {
  /** The LeaderOS site's address, e.g. `https://shop.example`. */
  url: string;
  /** The site's API key (its owner's, from its settings). */
  apiKey: string;
}

/**
 * A Tebex webstore: its Plugin API with the owner's secret key (a game server's, from Tebex's
 * control panel), or the text of its payments CSV export.
 */
export type TebexSource = { secret: string } | { csv: string };

/** A CraftingStore webstore: its API v7 with the owner's token, or the text of its payments CSV export. */
export type CraftingStoreSource = { token: string } | { csv: string };

/** One run of an importer, its report kept. */
export interface ImportRun {
  id: number;
  source: string;
  dryRun: boolean;
  status: 'running' | 'done' | 'failed';
  startedAt: string;
  finishedAt: string | null;
  /** What it brought so far; whole once the run is done. */
  report: ImportReport;
  /** Why a failed run stopped. */
  error: string | null;
}

export interface ImportsService {
  /**
   * Reads a LeaderOS site through its public API and brings in what it finds; safe to run again
   * and to resume after an interruption (nothing twice). `dryRun` writes nothing and reports what
   * it would do. `maxMissing`: users are found by id, and the scan ends after that many ids in a row with no user.
   */
  fromLeaderOs(source: LeaderOsSource, opts?: { dryRun?: boolean; maxMissing?: number }): Promise<ImportReport>;
  /** The same, going on after the call returns the run's id (the console follows it through `getRun`). */
  startLeaderOs(source: LeaderOsSource, opts?: { dryRun?: boolean }): Promise<number>;
  /**
   * Reads a Tebex webstore (its packages, every payment, each player's active packages) or its
   * payments CSV, and brings in what it finds, as fromLeaderOs does: safe to run again and to resume.
   */
  fromTebex(source: TebexSource, opts?: { dryRun?: boolean }): Promise<ImportReport>;
  /** The same, going on after the call returns the run's id. */
  startTebex(source: TebexSource, opts?: { dryRun?: boolean }): Promise<number>;
  /** A CraftingStore webstore (its packages and every payment) or its payments CSV, as fromTebex. */
  fromCraftingStore(source: CraftingStoreSource, opts?: { dryRun?: boolean }): Promise<ImportReport>;
  startCraftingStore(source: CraftingStoreSource, opts?: { dryRun?: boolean }): Promise<number>;
  /** The runs, newest first. */
  runs(limit: number): Promise<ImportRun[]>;
  getRun(id: number): Promise<ImportRun | undefined>;
}

export const importsRef = createServiceRef<ImportsService>('imports');
