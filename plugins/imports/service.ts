/** The imports service: one importer per kind of source, sharing the link rows; each run is kept with its report. */
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { countParam } from '../../core/db.ts';
import { sql } from '../../core/sql.ts';
import type { CraftingStoreSource, ImportReport, ImportRun, ImportsService, LeaderOsSource, TebexSource } from './contract.ts';
import { CraftingStoreImport } from './craftingstore.ts';
import { ImportsRun } from './entities.ts';
import type { HostedPeers } from './hosted.ts';
import type { Importer } from './importer.ts';
import { LeaderOsImport, type LeaderOsPeers } from './leaderos.ts';
import { Links } from './links.ts';
import { TebexImport } from './tebex.ts';

/** Lines of "not brought" a kept report holds; a longer list ends with how many more there were. */
const KEPT_LINES = 1000;

function kept(report: ImportReport): string {
  const { notBrought } = report;
  const lines = notBrought.length > KEPT_LINES ? [...notBrought.slice(0, KEPT_LINES), `… and ${notBrought.length - KEPT_LINES} more.`] : notBrought;
  return JSON.stringify({ ...report, notBrought: lines });
}

type Peers = LeaderOsPeers & HostedPeers;
type Opts = { dryRun?: boolean };
type Make = (peers: Peers, links: Links, dryRun: boolean, progress: (report: ImportReport) => Promise<void>) => Importer;

export class DbImportsService implements ImportsService {
  readonly #db: Database;
  readonly #links: Links;
  /** Read at each run: an optional peer (votes) may register after this feature. */
  readonly #peers: () => Peers;
  readonly #maxMissing: number;
  /** How often a running import's kept report is brought up to date, in milliseconds. */
  readonly #progressEvery: number;
  readonly #clock: () => number;
  readonly #audit: AuditLog;

  constructor(db: Database, peers: () => Peers, audit: AuditLog, opts: { maxMissing: number; progressEvery: number; clock?: () => number }) {
    this.#db = db;
    this.#audit = audit;
    this.#links = new Links(db);
    this.#peers = peers;
    this.#maxMissing = opts.maxMissing;
    this.#progressEvery = opts.progressEvery;
    this.#clock = opts.clock ?? Date.now;
  }

  /** Keeps the run's row, then its report as it grows (at most every progressEvery ms), so the console can follow it. */
  async #begin(make: Make, dryRun: boolean): Promise<{ id: number; importer: Importer }> {
    let id = 0;
    let saved = this.#clock();
    const progress = async (report: ImportReport) => {
      if (!id || this.#clock() - saved < this.#progressEvery) return;
      saved = this.#clock();
      await ImportsRun.update(this.#db, id, { report: kept(report) });
    };
    const importer = make(this.#peers(), this.#links, dryRun, progress);
    const { source } = importer.report;
    // The start is the staff change (what the run brings is in its report): audited with its run's row.
    id = await this.#db.transaction(async () => {
      const run = await ImportsRun.insert(this.#db, { source, dryRun, status: 'running', startedAt: now(), report: kept(importer.report) });
      await this.#audit.record({
        action: 'imports.start',
        target: { type: 'import', id: run },
        summary: `Started ${dryRun ? 'a dry run of ' : ''}import ${run} from ${source}`,
        after: { source, dryRun },
      });
      return run;
    });
    return { id, importer };
  }

  /** Runs the import and keeps how it ended. */
  async #finish(id: number, importer: Importer): Promise<ImportReport> {
    try {
      const report = await importer.run();
      await ImportsRun.update(this.#db, id, { status: 'done', finishedAt: now(), report: kept(report) });
      return report;
    } catch (err) {
      const error = String((err as Error)?.message ?? err).slice(0, 1000);
      await ImportsRun.update(this.#db, id, { status: 'failed', finishedAt: now(), report: kept(importer.report), error });
      throw err;
    }
  }

  async #now(make: Make, opts: Opts): Promise<ImportReport> {
    const { id, importer } = await this.#begin(make, opts.dryRun === true);
    return this.#finish(id, importer);
  }

  async #start(make: Make, opts: Opts): Promise<number> {
    const { id, importer } = await this.#begin(make, opts.dryRun === true);
    // Its end is kept in the run's row, failure included: nobody awaits it.
    this.#finish(id, importer).catch(() => {});
    return id;
  }

  #leaderOs(source: LeaderOsSource, maxMissing = this.#maxMissing): Make {
    return (peers, links, dryRun, progress) => new LeaderOsImport(source, peers, links, dryRun, maxMissing, progress);
  }

  #tebex(source: TebexSource): Make {
    return (peers, links, dryRun, progress) => new TebexImport(source, peers, links, dryRun, progress);
  }

  fromLeaderOs(source: LeaderOsSource, opts: Opts & { maxMissing?: number } = {}): Promise<ImportReport> {
    return this.#now(this.#leaderOs(source, opts.maxMissing), opts);
  }

  startLeaderOs(source: LeaderOsSource, opts: Opts = {}): Promise<number> {
    return this.#start(this.#leaderOs(source), opts);
  }

  fromTebex(source: TebexSource, opts: Opts = {}): Promise<ImportReport> {
    return this.#now(this.#tebex(source), opts);
  }

  startTebex(source: TebexSource, opts: Opts = {}): Promise<number> {
    return this.#start(this.#tebex(source), opts);
  }

  fromCraftingStore(source: CraftingStoreSource, opts: Opts = {}): Promise<ImportReport> {
    return this.#now((peers, links, dryRun, progress) => new CraftingStoreImport(source, peers, links, dryRun, progress), opts);
  }

  startCraftingStore(source: CraftingStoreSource, opts: Opts = {}): Promise<number> {
    return this.#start((peers, links, dryRun, progress) => new CraftingStoreImport(source, peers, links, dryRun, progress), opts);
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
