/** The imports service: one importer per kind of source, sharing the link rows; each run is kept with its report. */
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { countParam } from '../../core/db.ts';
import { sql } from '../../core/sql.ts';
import type { ImportReport, ImportRun, ImportsService, LeaderOsSource } from './contract.ts';
import { ImportsRun } from './entities.ts';
import { LeaderOsImport, type LeaderOsPeers } from './leaderos.ts';
import { Links } from './links.ts';

/** Lines of "not brought" a kept report holds; a longer list ends with how many more there were. */
const KEPT_LINES = 1000;

function kept(report: ImportReport): string {
  const { notBrought } = report;
  const lines = notBrought.length > KEPT_LINES ? [...notBrought.slice(0, KEPT_LINES), `… and ${notBrought.length - KEPT_LINES} more.`] : notBrought;
  return JSON.stringify({ ...report, notBrought: lines });
}

export class DbImportsService implements ImportsService {
  readonly #db: Database;
  readonly #links: Links;
  /** Read at each run: an optional peer (votes) may register after this feature. */
  readonly #peers: () => LeaderOsPeers;
  readonly #maxMissing: number;

  constructor(db: Database, peers: () => LeaderOsPeers, maxMissing: number) {
    this.#db = db;
    this.#links = new Links(db);
    this.#peers = peers;
    this.#maxMissing = maxMissing;
  }

  async #begin(source: LeaderOsSource, dryRun: boolean): Promise<{ id: number; importer: LeaderOsImport }> {
    const importer = new LeaderOsImport(source, this.#peers(), this.#links, dryRun);
    const id = await ImportsRun.insert(this.#db, {
      source: importer.report.source,
      dryRun,
      status: 'running',
      startedAt: now(),
      report: kept(importer.report),
    });
    return { id, importer };
  }

  /** Runs the import and keeps how it ended. */
  async #finish(id: number, importer: LeaderOsImport, maxMissing: number): Promise<ImportReport> {
    try {
      const report = await importer.run(maxMissing);
      await ImportsRun.update(this.#db, id, { status: 'done', finishedAt: now(), report: kept(report) });
      return report;
    } catch (err) {
      const error = String((err as Error)?.message ?? err).slice(0, 1000);
      await ImportsRun.update(this.#db, id, { status: 'failed', finishedAt: now(), report: kept(importer.report), error });
      throw err;
    }
  }

  async fromLeaderOs(source: LeaderOsSource, opts: { dryRun?: boolean; maxMissing?: number } = {}): Promise<ImportReport> {
    const { id, importer } = await this.#begin(source, opts.dryRun === true);
    return this.#finish(id, importer, opts.maxMissing ?? this.#maxMissing);
  }

  async startLeaderOs(source: LeaderOsSource, opts: { dryRun?: boolean } = {}): Promise<number> {
    const { id, importer } = await this.#begin(source, opts.dryRun === true);
    // Its end is kept in the run's row, failure included: nobody awaits it.
    this.#finish(id, importer, this.#maxMissing).catch(() => {});
    return id;
  }

  async runs(limit: number): Promise<ImportRun[]> {
    const rows = await ImportsRun.select(this.#db, sql`order by ${ImportsRun.c.id} desc limit ${countParam(limit)}`);
    return rows.map((r) => ({ ...r, report: JSON.parse(r.report) as ImportReport }));
  }

  async getRun(id: number): Promise<ImportRun | undefined> {
    const row = await ImportsRun.find(this.#db, id);
    return row && { ...row, report: JSON.parse(row.report) as ImportReport };
  }
}
