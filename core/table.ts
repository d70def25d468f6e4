/**
 * One source per table. A feature describes each table once, in its entities.ts, with the same
 * words as MikroORM's `defineEntity` and `p` builders; from that one description come
 *   - the record type the feature works with (`TableRecord<typeof StoreProduct>`),
 *   - the column list, the row → record mapping and the record → row values of every read and
 *     write (`columns`, `fromRow`, `toRow`, `insert`, `update`),
 *   - and, only when migrations or schema checks need it, the MikroORM entity itself (`entity()`),
 *     made by replaying the same builder calls on MikroORM's own `p`.
 * MikroORM (tens of MiB of modules) then stays unloaded in a server whose schema is up to date.
 * Adding a column is one line here, one migration (`npm run migration:create`), and wherever the
 * API shows it.
 */
import type { Database } from './db.ts';

type Kind = 'integer' | 'bigint' | 'string' | 'text' | 'boolean';
type Call = [method: string, args: unknown[]];

/** A column being described; `T` is the type its value has in a record. */
export class Column<T> {
  declare readonly __type: T;
  readonly kind: Kind;
  readonly calls: readonly Call[];
  readonly isNullable: boolean;
  readonly isPrimary: boolean;

  constructor(kind: Kind, calls: Call[], isNullable = false, isPrimary = false) {
    this.kind = kind;
    this.calls = calls;
    this.isNullable = isNullable;
    this.isPrimary = isPrimary;
  }

  #with(method: string, args: unknown[]): Column<T> {
    return new Column<T>(this.kind, [...this.calls, [method, args]], this.isNullable, this.isPrimary || method === 'primary');
  }

  length(n: number): Column<T> { return this.#with('length', [n]); }
  primary(): Column<T> { return this.#with('primary', []); }
  autoincrement(on = true): Column<T> { return this.#with('autoincrement', [on]); }
  index(): Column<T> { return this.#with('index', []); }
  unique(): Column<T> { return this.#with('unique', []); }
  default(value: T): Column<T> { return this.#with('default', [value]); }
  /** The column's SQL type where the builder's own is not the one wanted (e.g. `mediumtext`). */
  columnType(type: string): Column<T> { return this.#with('columnType', [type]); }
  /** Schema checks ignore these differences (a type migrated by hand per dialect, say). */
  ignoreSchemaChanges(...what: string[]): Column<T> { return this.#with('ignoreSchemaChanges', what); }

  /** Narrows the record type, e.g. to a union of the strings a column may hold; the column itself stays as it is. */
  $type<U extends T>(): Column<U> {
    return this as unknown as Column<U>;
  }

  nullable(): Column<T | null> {
    return new Column<T | null>(this.kind, [...this.calls, ['nullable', []]], true, this.isPrimary);
  }
}

/** The column builders, named as MikroORM names them. */
export const p = {
  integer: () => new Column<number>('integer', [['integer', []]]),
  /** Money in cents and other counts past 2^31; read as a number (below 2^53). */
  bigint: (mode?: 'number') => new Column<number>('bigint', [['bigint', mode ? [mode] : []]]),
  string: () => new Column<string>('string', [['string', []]]),
  text: () => new Column<string>('text', [['text', []]]),
  boolean: () => new Column<boolean>('boolean', [['boolean', []]]),
};

type Properties = Record<string, Column<unknown>>;
export type RecordOf<P extends Properties> = { [K in keyof P]: P[K]['__type'] };
/** The record type of a table: `TableRecord<typeof StoreProduct>`. */
export type TableRecord<T> = T extends Table<infer P> ? RecordOf<P> : never;

export interface TableOptions<P extends Properties> {
  name: string;
  tableName: string;
  properties: P;
  uniques?: { properties: (keyof P & string)[] }[];
  indexes?: { properties: (keyof P & string)[] }[];
  /** CHECK constraints: the database's own last word on what a row may hold. */
  checks?: { name: string; expression: string }[];
}

type DbRow = Record<string, unknown>;

/** A property's column name, as MikroORM's default naming strategy makes it: `parentId` → `parent_id`. */
function columnName(property: string): string {
  return property.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/**
 * `fromRow` for one table, compiled once: a single object literal with every property read from
 * its column, as a hand-written mapper would be. A generic loop over the columns (a closure call
 * and a keyed store per value) took four times as long, which a listing of a thousand products
 * pays a thousand times. The source is made only from the table's own definition, never from data.
 */
function compileReader<R>(columns: [property: string, column: string, kind: Kind, nullable: boolean][], byPosition: boolean): (row: R) => DbRow {
  const fields = columns.map(([property, column, kind, nullable], i) => {
    const value = byPosition ? `row[${i}]` : `row[${JSON.stringify(column)}]`;
    const read = kind === 'boolean' ? `Boolean(Number(${value}))` : kind === 'integer' || kind === 'bigint' ? `Number(${value})` : `String(${value})`;
    return `${JSON.stringify(property)}: ${nullable ? `${value} == null ? null : ${read}` : read}`;
  });
  return new Function('row', `return { ${fields.join(', ')} };`) as (row: R) => DbRow;
}

export class Table<P extends Properties> {
  readonly name: string;
  readonly tableName: string;
  readonly options: TableOptions<P>;
  /** Property → column name. */
  readonly columnOf: { readonly [K in keyof P]: string };
  /** Every column, quoted, in property order (`select` reads them; a join lists `qualifiedColumns`). */
  readonly columns: string;
  /** How many columns that is: in a joined row read as an array, where what follows them begins. */
  readonly width: number;
  /** Property → quoted column, for the statements that write. */
  readonly #quoted: Map<string, string>;
  readonly #read: (row: DbRow) => DbRow;
  /** The same for a row of every column as an array, in the order of `columns`. */
  readonly #readArray: (row: unknown[]) => DbRow;
  /** The primary key's column. */
  readonly #key: string;
  #entity?: Promise<object>;

  constructor(options: TableOptions<P>) {
    this.name = options.name;
    this.tableName = options.tableName;
    this.options = options;
    const entries = Object.entries(options.properties).map(([k, c]) => [k, columnName(k), c] as const);
    this.columnOf = Object.fromEntries(entries.map(([k, name]) => [k, name])) as { [K in keyof P]: string };
    this.#quoted = new Map(entries.map(([k, name]) => [k, `\`${name}\``]));
    this.columns = [...this.#quoted.values()].join(', ');
    this.width = entries.length;
    const readers = entries.map(([k, name, c]) => [k, name, c.kind, c.isNullable] as [string, string, Kind, boolean]);
    this.#read = compileReader<DbRow>(readers, false);
    this.#readArray = compileReader<unknown[]>(readers, true);
    this.#key = entries.find(([, , c]) => c.isPrimary)?.[1] ?? 'id';
  }

  /**
   * The column list qualified by a table alias, for a statement that joins other tables:
   * `select ${SupportTicket.qualifiedColumns('t')}, c.name as category_name from support_tickets t join ...`.
   * The rows still carry plain column names, so `fromRow` reads them.
   */
  qualifiedColumns(alias: string): string {
    return Object.values<string>(this.columnOf).map((c) => `${alias}.\`${c}\``).join(', ');
  }

  /**
   * A read of some columns only (a page that shows a few of them): their list for a select, and a
   * row of them read as an array, in that order, as a record of those properties.
   */
  pick<K extends keyof P & string>(...properties: K[]): { columns: string; fromArray(row: unknown[]): Pick<RecordOf<P>, K> } {
    const all = this.options.properties;
    const readers = properties.map((k) => [k, this.columnOf[k], all[k]!.kind, all[k]!.isNullable] as [string, string, Kind, boolean]);
    const read = compileReader<unknown[]>(readers, true);
    return { columns: properties.map((k) => this.#quoted.get(k)!).join(', '), fromArray: (row) => read(row) as Pick<RecordOf<P>, K> };
  }

  /** A row as the driver returns it (`select ${columns}`), as a record. */
  fromRow(row: DbRow): RecordOf<P> {
    return this.#read(row) as RecordOf<P>;
  }

  /**
   * A row read as an array (`db.queryArrays`) whose first values are every column in order
   * (`select ${qualifiedColumns('a')}, …`), as a record; what follows them is the caller's.
   */
  fromArray(row: unknown[]): RecordOf<P> {
    return this.#readArray(row) as RecordOf<P>;
  }

  /**
   * The record whose key is `id`, or undefined. An integer key no row can have (not a positive
   * safe integer) is answered without a statement. `lock` holds the row until the transaction
   * ends: 'update' to write it, 'share' to keep it as read (MySQL; SQLite serialises writers).
   */
  async find(db: Database, id: number | string, lock?: 'update' | 'share'): Promise<RecordOf<P> | undefined> {
    if (typeof id === 'number' && !(Number.isSafeInteger(id) && id > 0)) return undefined;
    const locking = lock === 'update' ? db.forUpdate : lock === 'share' ? db.forShare : '';
    const [record] = await this.select(db, `where \`${this.#key}\` = ?${locking}`, [id]);
    return record;
  }

  /**
   * The records of `select <every column> from <table> <rest>`, `rest` being the statement's
   * where, order and limit clauses with its values bound. The rows travel as arrays and are read
   * by position: a thousand products read this way took 1.5 ms on SQLite against 3.9 as objects.
   */
  async select(db: Database, rest = '', params: unknown[] = []): Promise<RecordOf<P>[]> {
    const rows = await db.queryArrays(`select ${this.columns} from ${this.tableName} ${rest}`, params);
    return rows.map(this.#readArray) as RecordOf<P>[];
  }

  /** The values of the properties given (undefined ones left out), keyed by quoted column. */
  toRow(values: Partial<RecordOf<P>>): DbRow {
    const row: DbRow = {};
    for (const property in values) {
      const value = values[property];
      const column = this.#quoted.get(property);
      if (value === undefined || column === undefined) continue;
      row[column] = typeof value === 'boolean' ? Number(value) : value;
    }
    return row;
  }

  /** Inserts a record (its known properties; the database fills the rest) and returns the new id. */
  async insert(db: Database, values: Partial<RecordOf<P>>): Promise<number> {
    const row = this.toRow(values);
    const columns = Object.keys(row);
    const { insertId } = await db.run(
      `insert into ${this.tableName} (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`, Object.values(row));
    return insertId;
  }

  /**
   * Inserts several records in one statement (fewer round trips on a hot path). Every record gives
   * the same properties: the first one's make the column list.
   */
  async insertMany(db: Database, records: Partial<RecordOf<P>>[]): Promise<void> {
    if (records.length === 0) return;
    const rows = records.map((r) => this.toRow(r));
    const columns = Object.keys(rows[0]!);
    for (const row of rows) {
      if (Object.keys(row).join() !== columns.join()) throw new Error(`${this.tableName}: insertMany needs the same properties in every record`);
    }
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    await db.run(`insert into ${this.tableName} (${columns.join(', ')}) values ${rows.map(() => tuple).join(', ')}`,
      rows.flatMap((row) => Object.values(row)));
  }

  /**
   * Writes the properties given (undefined ones left out, the key never) of the row whose key is
   * `id`; returns how many rows matched. Give only what changes, never a record read and merged:
   * its other values are stale by the time of the write and would undo what others wrote in
   * between (a buy's stock). A whole record carries its `id`, which the type refuses.
   */
  async update(db: Database, id: number, values: Partial<RecordOf<P>> & { id?: never }): Promise<number> {
    const row = this.toRow(values);
    delete row[`\`${this.#key}\``];
    const columns = Object.keys(row);
    if (columns.length === 0) return 0;
    const { affectedRows } = await db.run(
      `update ${this.tableName} set ${columns.map((c) => `${c} = ?`).join(', ')} where \`${this.#key}\` = ?`, [...Object.values(row), id]);
    return affectedRows;
  }

  /** The MikroORM entity of this table, for migrations and schema checks: the same builder calls, replayed. */
  entity(): Promise<object> {
    this.#entity ??= import('@mikro-orm/core').then(({ defineEntity, p: orm }) => {
      const properties = Object.fromEntries(Object.entries(this.options.properties).map(([k, column]) => {
        let builder: unknown = orm;
        for (const [method, args] of column.calls) builder = (builder as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
        return [k, builder];
      }));
      return defineEntity({ ...this.options, properties } as never) as object;
    });
    return this.#entity;
  }
}

/** Describes a table once; see the top of this file. */
export function defineEntity<P extends Properties>(options: TableOptions<P>): Table<P> {
  return new Table(options);
}
