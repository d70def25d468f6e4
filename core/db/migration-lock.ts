/**
 * The migration lock: of several instances started at once against one database (a process
 * manager's replicas, instances on different Galera nodes), one migrates and the others wait.
 *
 * A row, not a MariaDB named lock: GET_LOCK holds only on the node that took it, while a row
 * replicates, and two nodes inserting it at once lose one at certification. The row names its
 * owner and a lease the owner renews while it migrates, so a lock whose owner died (a crash, a
 * SIGKILL mid-migration) is taken over once its lease has run out. Times are the database's
 * clock, the one all instances share.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { fields, raw, sql, typed } from '../sql.ts';
import type { Database } from './database.ts';
import { isLockConflict, isUniqueViolation, sqliteCode } from './errors.ts';

export const MIGRATION_LOCK_TABLE = 'core_migration_lock';

/** Made before any migration runs (so not by one), by every instance: `if not exists` makes that idempotent. */
export const CREATE_LOCK_TABLE = {
  sqlite: `create table if not exists ${MIGRATION_LOCK_TABLE} (id integer not null primary key, owner text not null, expires_at integer not null)`,
  mysql:
    `create table if not exists ${MIGRATION_LOCK_TABLE} (id int not null primary key, owner varchar(200) not null, expires_at bigint not null) ` +
    'engine = InnoDB',
};

/** The database's clock, in seconds since the epoch. */
const NOW = { sqlite: raw('unixepoch()'), mysql: raw('unix_timestamp()') };

const SQLITE_BUSY = 5;
/** The longest pause between two looks at a lock another instance holds. */
const MAX_POLL_MS = 2000;

export interface MigrationLockOptions {
  /** How long the lock outlives its owner's last renewal (renewed every third of it). */
  leaseSeconds: number;
  /** Where the waiting and a takeover are told. */
  say: (line: string) => void;
}

/**
 * True when `err` means another instance got there first: the row exists (unique key), the
 * write lost to another node's (Galera certification) or to a row lock, or SQLite's file is
 * being written by another process (its busy wait ran out).
 */
function lostRace(err: unknown): boolean {
  return isUniqueViolation(err) || isLockConflict(err) || sqliteCode(err) === SQLITE_BUSY;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A held migration lock: renewed until released. */
export class MigrationLock {
  readonly #db: Database;
  readonly #owner: string;
  readonly #renewal: NodeJS.Timeout;

  private constructor(db: Database, owner: string, { leaseSeconds, say }: MigrationLockOptions) {
    this.#db = db;
    this.#owner = owner;
    const now = NOW[db.dialect];
    // A migration may outlast the lease (a big table altered): renewed, it is not taken over.
    this.#renewal = setInterval(
      () => {
        db.run(sql`update ${raw(MIGRATION_LOCK_TABLE)} set expires_at = ${now} + ${leaseSeconds} where id = 1 and owner = ${owner}`).catch((err: unknown) =>
          say(`Could not renew the migration lock (${(err as Error).message}); it lapses in ${leaseSeconds} s unless a renewal succeeds.`),
        );
      },
      (leaseSeconds * 1000) / 3,
    );
    this.#renewal.unref();
  }

  /**
   * Takes the lock, waiting (with backoff, saying so once) while another instance holds it.
   * Resolves undefined, without the lock, when `finished` says while waiting that there is nothing
   * left to do (the holder migrated).
   */
  static async take(db: Database, options: MigrationLockOptions, finished: () => Promise<boolean>): Promise<MigrationLock | undefined> {
    const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    let told = false;
    for (let wait = 50; ; wait = Math.min(wait * 2, MAX_POLL_MS)) {
      const holder = await MigrationLock.#claim(db, owner, options);
      if (holder === undefined) return new MigrationLock(db, owner, options);
      if (await finished()) return undefined;
      if (!told) {
        options.say(`Another instance (${holder}) is migrating the database; waiting for it to finish.`);
        told = true;
      }
      await sleep(wait);
    }
  }

  /** Claims the row: undefined once it is ours, else who holds it. */
  static async #claim(db: Database, owner: string, { leaseSeconds, say }: MigrationLockOptions): Promise<string | undefined> {
    const now = NOW[db.dialect];
    try {
      await db.run(raw(CREATE_LOCK_TABLE[db.dialect]));
      await db.run(sql`insert into ${raw(MIGRATION_LOCK_TABLE)} (id, owner, expires_at) values (1, ${owner}, ${now} + ${leaseSeconds})`);
      return undefined;
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
    try {
      const lock = fields({ owner: typed<string>(raw('owner')), stale: typed<number | string>(sql`case when expires_at < ${now} then 1 else 0 end`) });
      const [held] = await db.query(sql`select ${lock} from ${raw(MIGRATION_LOCK_TABLE)} where id = 1`);
      // Released between the two statements: the next try inserts it.
      if (!held) return 'just released';
      if (Number(held.stale) !== 1) return held.owner;
      // Conditional on the owner seen: of two instances taking over at once, one changes the row.
      const taken = await db.run(sql`update ${raw(MIGRATION_LOCK_TABLE)} set owner = ${owner}, expires_at = ${now} + ${leaseSeconds}
        where id = 1 and owner = ${held.owner} and expires_at < ${now}`);
      if (taken.affectedRows !== 1) return held.owner;
      say(`Took over the migration lock of ${held.owner}, whose lease had run out (it stopped while migrating).`);
      return undefined;
    } catch (err) {
      if (!lostRace(err)) throw err;
      return 'another instance';
    }
  }

  /** Lets the lock go: the next instance to look finds nothing to do. */
  async release(): Promise<void> {
    clearInterval(this.#renewal);
    await this.#db.run(sql`delete from ${raw(MIGRATION_LOCK_TABLE)} where id = 1 and owner = ${this.#owner}`);
  }
}
