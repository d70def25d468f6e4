/** The imports service: one importer per kind of source, sharing the link rows. */
import type { Database } from '../../core/db.ts';
import type { ImportReport, ImportsService, LeaderOsSource } from './contract.ts';
import { LeaderOsImport, type LeaderOsPeers } from './leaderos.ts';
import { Links } from './links.ts';

export class DbImportsService implements ImportsService {
  readonly #links: Links;
  /** Read at each run: an optional peer (votes) may register after this feature. */
  readonly #peers: () => LeaderOsPeers;
  readonly #maxMissing: number;

  constructor(db: Database, peers: () => LeaderOsPeers, maxMissing: number) {
    this.#links = new Links(db);
    this.#peers = peers;
    this.#maxMissing = maxMissing;
  }

  fromLeaderOs(source: LeaderOsSource, opts: { dryRun?: boolean; maxMissing?: number } = {}): Promise<ImportReport> {
    return new LeaderOsImport(source, this.#peers(), this.#links, opts.dryRun === true).run(opts.maxMissing ?? this.#maxMissing);
  }
}
