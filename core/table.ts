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
import { DomainError } from './errors.ts';
import { type Expr, Sql, identifier, join, raw, sql, toSql, typed, type SqlSource, type Value } from './sql.ts';

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

  length(n: number): Column<T> {
    return this.#with('length', [n]);
  }
  primary(): Column<T> {
    return this.#with('primary', []);
  }
  autoincrement(on = true): Column<T> {
    return this.#with('autoincrement', [on]);
  }
  index(): Column<T> {
    return this.#with('index', []);
  }
  unique(): Column<T> {
    return this.#with('unique', []);
  }
  default(value: T): Column<T> {
    return this.#with('default', [value]);
  }
  /** The column's SQL type where the builder's own is not the one wanted (e.g. `mediumtext`). */
  columnType(type: string): Column<T> {
    return this.#with('columnType', [type]);
  }
  /** Schema checks ignore these differences (a type migrated by hand per dialect, say). */
  ignoreSchemaChanges(...what: string[]): Column<T> {
    return this.#with('ignoreSchemaChanges', what);
  }

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
/** What a driver gives for a value of the record type `T` in a row read as an object: a boolean is 0 or 1. */
export type Stored<T> = T extends boolean ? number : T;
/**
 * A table's columns by property, each as its quoted name (qualified by an alias in `as(alias).c`),
 * typed by what a read gives for it, so `fields({ stock: T.c.stock })` types its row.
 */
export type ColumnsOf<P extends Properties> = { readonly [K in keyof P]: Expr<Stored<P[K]['__type']>> };
/** The record type of a table: `TableRecord<typeof StoreProduct>`. */
export type TableRecord<T> = T extends Table<infer P> ? RecordOf<P> : never;

export interface TableOptions<P extends Properties> {
  name: string;
  tableName: string;
  properties: P;
  uniques?: { properties: (keyof P & string)[] }[];
  /** `name` where a statement names the index (a hint); else MikroORM names it from its columns. */
  indexes?: { name?: string; properties: (keyof P & string)[] }[];
  /** CHECK constraints: the database's own last word on what a row may hold. */
  checks?: { name: string; expression: string }[];
}

type DbRow = Record<string, unknown>;
const NOTHING = raw('');

/** A property's column name, as MikroORM's default naming strategy makes it: `parentId` → `parent_id`. */
function columnName(property: string): string {
  return property.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/**
 * `fromRow` for one table, compiled once: a single object literal with every property read from
 * its column, as a hand-written mapper would be: a generic loop over the columns (a closure call
 * and a keyed store per value) is much slower, and a listing pays it once a row (docs/performance.md).
 * The source is made only from the table's own definition, never from data.
 */
function compileReader<R>(columns: [property: string, column: string, kind: Kind, nullable: boolean][], byPosition: boolean, from = 0): (row: R) => DbRow {
  const fields = columns.map(([property, column, kind, nullable], i) => {
    const value = byPosition ? `row[${from + i}]` : `row[${JSON.stringify(column)}]`;
    const read = kind === 'boolean' ? `Boolean(Number(${value}))` : kind === 'integer' || kind === 'bigint' ? `Number(${value})` : `String(${value})`;
    return `${JSON.stringify(property)}: ${nullable ? `${value} == null ? null : ${read}` : read}`;
  });
  return new Function('row', `return { ${fields.join(', ')} };`) as (row: R) => DbRow;
}

/** The insert texts a table keeps (insertMany): a bulk import's varying row counts go past it and are built each time. */
const MAX_INSERT_SHAPES = 16;

export class Table<P extends Properties> implements SqlSource {
  readonly name: string;
  readonly tableName: string;
  readonly options: TableOptions<P>;
  /** Property → column name. */
  readonly columnOf: { readonly [K in keyof P]: string };
  /**
   * Property → quoted column, for statements: `sql\`update ${T} set ${T.c.stock} = ${n}\``. A
   * property renamed in the description fails the typecheck wherever a statement names it.
   */
  readonly c: ColumnsOf<P>;
  /** The table's name, quoted: what the table stands for in a `sql` template. */
  readonly [toSql]: Sql;
  /** Every column, quoted, in property order (`select` reads them; a join lists `as(alias).columns`). */
  readonly columns: Sql;
  /** How many columns that is. */
  readonly width: number;
  /** Property → quoted column, for the statements that write. */
  readonly #quoted: Map<string, string>;
  readonly #read: (row: DbRow) => DbRow;
  /** The same for a row of every column as an array, in the order of `columns`. */
  readonly #readArray: (row: unknown[]) => DbRow;
  /** The primary key's column. */
  readonly #key: string;
  readonly #keyColumn: Sql;
  /**
   * `select <every column> from <table> `, and `where <key> = ?`: the statements of every table
   * share this file's call sites, so their text is put together here, as a hand-written one would be.
   */
  readonly #selectAll: string;
  readonly #inserts = new Map<string, string>();
  readonly #byKey: string;
  /** `fromArray` for rows where this table's columns start further on (a join's), by where they start. */
  readonly #readAt = new Map<number, (row: unknown[]) => DbRow>();
  readonly #aliases = new Map<string, Alias<P>>();
  #entity?: Promise<object>;

  constructor(options: TableOptions<P>) {
    this.name = options.name;
    this.tableName = options.tableName;
    this.options = options;
    const entries = Object.entries(options.properties).map(([k, c]) => [k, columnName(k), c] as const);
    this.columnOf = Object.fromEntries(entries.map(([k, name]) => [k, name])) as { [K in keyof P]: string };
    this.#quoted = new Map(entries.map(([k, name]) => [k, `\`${name}\``]));
    this.c = Object.fromEntries(entries.map(([k, name]) => [k, identifier(name)])) as unknown as ColumnsOf<P>;
    this[toSql] = identifier(options.tableName);
    this.columns = raw([...this.#quoted.values()].join(', '));
    this.width = entries.length;
    const readers = entries.map(([k, name, c]) => [k, name, c.kind, c.isNullable] as [string, string, Kind, boolean]);
    this.#read = compileReader<DbRow>(readers, false);
    this.#readArray = compileReader<unknown[]>(readers, true);
    this.#key = entries.find(([, , c]) => c.isPrimary)?.[1] ?? 'id';
    this.#keyColumn = identifier(this.#key);
    this.#selectAll = `select ${this.columns.text} from ${this[toSql].text} `;
    this.#byKey = `where ${this.#keyColumn.text} = ?`;
  }

  /**
   * The table under an alias, for a statement that joins tables: `const p = StoreProduct.as('p')`,
   * then `sql\`select ${p.columns} from ${p} join ... where ${p.c.id} = ${id}\``. Made once per alias.
   */
  as(alias: string): Alias<P> {
    let aliased = this.#aliases.get(alias);
    if (!aliased) this.#aliases.set(alias, (aliased = new Alias(this, alias)));
    return aliased;
  }

  /** This table's record from a row read as an array whose columns (all, in order) start at `from`. */
  fromArrayAt(row: unknown[], from: number): RecordOf<P> {
    let read = this.#readAt.get(from);
    if (!read) {
      const all = this.options.properties;
      read = compileReader<unknown[]>(
        Object.keys(all).map((k) => [k, this.columnOf[k]!, all[k]!.kind, all[k]!.isNullable]),
        true,
        from,
      );
      this.#readAt.set(from, read);
    }
    return read(row) as RecordOf<P>;
  }

  /** The index of the key in `columns`: a left join's row of this table is missing when it is null. */
  get keyIndex(): number {
    return Object.values<string>(this.columnOf).indexOf(this.#key);
  }

  /**
   * A read of some columns only (a page that shows a few of them): their list for a select, and a
   * row of them read as an array, in that order, as a record of those properties.
   */
  pick<K extends keyof P & string>(...properties: K[]): { columns: Sql; fromArray(row: unknown[]): Pick<RecordOf<P>, K> } {
    const all = this.options.properties;
    const readers = properties.map((k) => [k, this.columnOf[k], all[k]!.kind, all[k]!.isNullable] as [string, string, Kind, boolean]);
    const read = compileReader<unknown[]>(readers, true);
    return { columns: raw(properties.map((k) => this.#quoted.get(k)!).join(', ')), fromArray: (row) => read(row) as Pick<RecordOf<P>, K> };
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
    const [record] = await this.select(db, new Sql(this.#byKey + locking, [id]));
    return record;
  }

  /**
   * The records of `select <every column> from <table> <rest>`, `rest` being the statement's
   * where, order and limit clauses, its values bound: `T.select(db, sql\`where ${T.c.x} = ${x}\`)`.
   * The rows travel as arrays and are read by position, cheaper than objects (docs/performance.md).
   */
  async select(db: Database, rest: Sql<unknown> = NOTHING): Promise<RecordOf<P>[]> {
    const rows = await db.queryArrays(new Sql(this.#selectAll + rest.text, rest.values));
    return rows.map(this.#readArray) as RecordOf<P>[];
  }

  /**
   * The values of the properties given (undefined ones left out), keyed by quoted column. NaN or an
   * infinity is refused (VALIDATION_ERROR naming the column): no column holds one, and the drivers
   * would store NULL, 0 or an error of their own instead.
   */
  toRow(values: Partial<RecordOf<P>>): DbRow {
    const row: DbRow = {};
    for (const property in values) {
      const value = values[property];
      const column = this.#quoted.get(property);
      if (value === undefined || column === undefined) continue;
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw new DomainError('VALIDATION_ERROR', `${property} must be a finite number (${this.tableName}.${this.columnOf[property]} cannot hold ${value}).`);
      }
      row[column] = typeof value === 'boolean' ? Number(value) : value;
    }
    return row;
  }

  /** Inserts a record (its known properties; the database fills the rest) and returns the new id. */
  async insert(db: Database, values: Partial<RecordOf<P>>): Promise<number> {
    const row = this.toRow(values);
    const { insertId } = await db.run(sql`insert into ${this} (${raw(Object.keys(row).join(', '))}) values ${Object.values(row) as Value[]}`);
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
    const values: Value[] = [];
    for (const row of rows) {
      const keys = Object.keys(row);
      if (keys.length !== columns.length || keys.some((k, i) => k !== columns[i])) {
        throw new Error(`${this.tableName}: insertMany needs the same properties in every record`);
      }
      for (const column of columns) values.push(row[column] as Value);
    }
    await db.run(new Sql(this.#insertText(columns, rows.length), values));
  }

  /** `insert into <table> (<columns>) values (?, …), …`, kept per column list and row count so a hot insert reuses its text. */
  #insertText(columns: string[], rows: number): string {
    const list = columns.join(', ');
    const key = `${rows} ${list}`;
    let text = this.#inserts.get(key);
    if (text === undefined) {
      const tuple = `(${'?, '.repeat(columns.length - 1)}?)`;
      text = `insert into ${this[toSql].text} (${list}) values ${Array.from({ length: rows }, () => tuple).join(', ')}`;
      if (this.#inserts.size < MAX_INSERT_SHAPES) this.#inserts.set(key, text);
    }
    return text;
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
      new Sql(`update ${this[toSql].text} set ${columns.map((c) => `${c} = ?`).join(', ')} ${this.#byKey}`, [...(Object.values(row) as Value[]), id]),
    );
    return affectedRows;
  }

  /** The MikroORM entity of this table, for migrations and schema checks: the same builder calls, replayed. */
  entity(): Promise<object> {
    this.#entity ??= import('@mikro-orm/core').then(({ defineEntity, p: orm }) => {
      const properties = Object.fromEntries(
        Object.entries(this.options.properties).map(([k, column]) => {
          let builder: unknown = orm;
          for (const [method, args] of column.calls) builder = (builder as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
          return [k, builder];
        }),
      );
      return defineEntity({ ...this.options, properties } as never) as object;
    });
    return this.#entity;
  }
}

/** A table under an alias in a statement that joins tables (`Table.as`). */
export class Alias<P extends Properties> implements SqlSource {
  readonly table: Table<P>;
  /** Property → column qualified by the alias: `p.\`stock\``. */
  readonly c: ColumnsOf<P>;
  /** Every column qualified by the alias, in the order of `Table.columns`. */
  readonly columns: Sql;
  /** `\`store_products\` p`: what the alias stands for after `from` or `join`. */
  readonly [toSql]: Sql;

  constructor(table: Table<P>, alias: string) {
    if (!/^[a-z_][a-z0-9_]*$/i.test(alias)) throw new TypeError(`Not an alias: ${alias}`);
    this.table = table;
    this.c = Object.fromEntries(Object.entries<string>(table.columnOf).map(([k, name]) => [k, typed(raw(`${alias}.\`${name}\``))])) as ColumnsOf<P>;
    this.columns = raw(
      Object.values<Sql<unknown>>(this.c)
        .map((c) => c.text)
        .join(', '),
    );
    this[toSql] = raw(`${table[toSql].text} ${alias}`);
  }

  /** `Table.pick` with the columns qualified by the alias, for a join whose tables share column names. */
  pick<K extends keyof P & string>(...properties: K[]): { columns: Sql; width: number; fromArray(row: unknown[]): Pick<RecordOf<P>, K> } {
    const { fromArray } = this.table.pick(...properties);
    return { columns: raw(properties.map((k) => this.c[k].text).join(', ')), fromArray, width: properties.length };
  }

  /** In a `joined` select list: a left-joined table, its record undefined when the join found no row. */
  optional(): Optional<P> {
    return { optional: this };
  }
}

interface Optional<P extends Properties> {
  readonly optional: Alias<P>;
}

/** What a `joined` select list holds (each table's own type is inferred below). */
type Selected = Sql | { readonly columns: Sql; readonly c: object } | { readonly optional: { readonly c: object } };
type JoinedRecord<S extends Record<string, Selected>> = {
  [K in keyof S]: S[K] extends Alias<infer P> ? RecordOf<P> : S[K] extends Optional<infer P> ? RecordOf<P> | undefined : unknown;
};

/**
 * The select list of a statement joining tables, and its rows (read as arrays) read back by
 * name rather than by column position:
 *   const FOR_SALE = joined({ product: StoreProduct.as('p'), rules: StoreProductRule.as('r').optional() });
 *   sql`select ${FOR_SALE.columns} from ...` → FOR_SALE.read(row).rules (undefined where no rules row joined).
 * An `Sql` expression (`sql\`coalesce(c.name, '')\``) is read as the value the driver gives.
 */
export function joined<S extends Record<string, Selected>>(
  select: S,
): {
  columns: Sql;
  read(row: unknown[]): JoinedRecord<S>;
  /** One part of the row, without reading the others. */
  one<K extends keyof S & string>(row: unknown[], name: K): JoinedRecord<S>[K];
} {
  let at = 0;
  const readers: [name: string, read: (row: unknown[]) => unknown][] = [];
  const parts: Sql[] = [];
  for (const [name, item] of Object.entries(select)) {
    const from = at;
    if (item instanceof Sql) {
      parts.push(item);
      readers.push([name, (row) => row[from]]);
      at += 1;
      continue;
    }
    const alias = (item instanceof Alias ? item : (item as Optional<Properties>).optional) as Alias<Properties>;
    const table = alias.table;
    parts.push(alias.columns);
    const key = from + table.keyIndex;
    readers.push([
      name,
      item instanceof Alias ? (row) => table.fromArrayAt(row, from) : (row) => (row[key] == null ? undefined : table.fromArrayAt(row, from)),
    ]);
    at += table.width;
  }
  const byName = new Map(readers);
  return {
    columns: join(parts, ', '),
    read: (row) => {
      const record: Record<string, unknown> = {};
      for (const [name, read] of readers) record[name] = read(row);
      return record as JoinedRecord<S>;
    },
    one: <K extends keyof S & string>(row: unknown[], name: K) => byName.get(name)!(row) as JoinedRecord<S>[K],
  };
}

/** Describes a table once; see the top of this file. */
export function defineEntity<P extends Properties>(options: TableOptions<P>): Table<P> {
  return new Table(options);
}
