/** The donation boards: ranked sums over a calendar period, or the latest single payments. */
import { countParam, type Database } from '../../core/db.ts';
import { displayTimestamp, now, parseClientTimestamp } from '../../core/format.ts';
import { fields, sql, sum, typed, where } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { Donation, DonationsService, DonationType } from './contract.ts';
import { DonationsEntry } from './entities.ts';

/** A completed payment as recorded: a donations entry before it has an id. */
export type Payment = Omit<TableRecord<typeof DonationsEntry>, 'id'>;

/**
 * Where the current calendar year, month or day began in the site's time zone, as a stored UTC
 * timestamp; undefined for the all-time board.
 */
function periodStart(type: Exclude<DonationType, 'latest'>, timeZone: string, at = now()): string | undefined {
  const local = displayTimestamp(at, timeZone);
  const start = {
    'top-alltime': undefined,
    'top-annual': `${local.slice(0, 4)}-01-01 00:00:00`,
    'top-monthly': `${local.slice(0, 7)}-01 00:00:00`,
    'top-daily': `${local.slice(0, 10)} 00:00:00`,
  }[type];
  return start === undefined ? undefined : parseClientTimestamp(start, timeZone);
}

const E = DonationsEntry.c;
/** Guests (user 0) are told apart by the name they bought under; an account's line is its id. */
const GUEST = sql`case when ${E.userId} = 0 then ${E.username} else '' end`;
/** What the latest board shows of an entry: the only columns it reads. */
const LATEST = DonationsEntry.pick('username', 'amount', 'currency', 'creationDate');

export class DbDonationsService implements DonationsService {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async record(p: Payment): Promise<void> {
    await DonationsEntry.insert(this.#db, p);
  }

  /**
   * One query per board. Guests' purchases (user 0) count per name typed at checkout. Sums never mix currencies: a user who paid in two currencies has a line
   * for each. Ties rank the user who reached the sum first (earlier last payment) higher.
   */
  async board(type: DonationType, limit: number, timeZone: string): Promise<Donation[]> {
    if (type === 'latest') {
      const rows = await this.#db.queryArrays(
        sql`select ${LATEST.columns} from ${DonationsEntry} order by ${E.creationDate} desc, ${E.id} desc limit ${countParam(limit)}`,
      );
      return rows.map((row) => {
        const { username, amount, currency, creationDate } = LATEST.fromArray(row);
        return { username, amount, currency, date: creationDate };
      });
    }
    const since = periodStart(type, timeZone);
    const summed = fields({
      username: typed<string>(sql`max(${E.username})`),
      amount: sum(E.amount),
      currency: E.currency,
      last: typed<string>(sql`max(${E.creationDate})`),
    });
    const rows = await this.#db.query(
      sql`select ${summed}
       from ${DonationsEntry} ${where(since !== undefined && sql`${E.creationDate} >= ${since}`)}
       group by ${E.userId}, ${GUEST}, ${E.currency} order by sum(${E.amount}) desc, max(${E.creationDate}), ${E.userId} limit ${countParam(limit)}`,
    );
    return rows.map((r) => ({ username: r.username, amount: Number(r.amount), currency: r.currency, date: r.last }));
  }
}
