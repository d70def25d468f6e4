/** The link rows (imports_links): what a source's thing became here, decided once by their unique key. */
import type { Database } from '../../core/db.ts';
import { now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import { ImportsLink } from './entities.ts';

const L = ImportsLink.c;

export class Links {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** What the thing became here, when a run brought it. */
  async localId(source: string, kind: string, sourceId: string): Promise<number | undefined> {
    const [link] = await ImportsLink.select(this.#db, sql`where ${L.source} = ${source} and ${L.kind} = ${kind} and ${L.sourceId} = ${sourceId}`);
    return link?.localId;
  }

  /**
   * Runs `make` and writes the link in one transaction, unless a link is there already. Two runs
   * at once both make it, and the unique key refuses the second link, which undoes its `make`.
   * `dryRun`: nothing runs; says whether it would.
   */
  async once(source: string, kind: string, sourceId: string, make: () => Promise<number>, dryRun: boolean): Promise<{ created: boolean; localId?: number }> {
    if (dryRun) {
      const localId = await this.localId(source, kind, sourceId);
      return { created: localId === undefined, localId };
    }
    return this.#db.transaction(async () => {
      const found = await this.localId(source, kind, sourceId);
      if (found !== undefined) return { created: false, localId: found };
      const localId = await make();
      await ImportsLink.insert(this.#db, { source, kind, sourceId, localId, createdAt: now() });
      return { created: true, localId };
    });
  }
}
