/**
 * Statements as tagged templates: `sql\`select ${T.c.stock} from ${T} where ${T.c.id} = ${id}\``.
 * Every interpolated value is bound as `?`; a list becomes `(?, ?, ?)`; a table (core/table.ts)
 * stands for its name and `T.c.<property>` for its quoted column, so a renamed property fails
 * `npm run typecheck` at every statement naming it; a `Sql` fragment is spliced in with its
 * values. Text from anywhere else enters only through `raw()`, for constants of the code.
 *
 * Our own short module rather than a package: the tag knows the table descriptions, keeps the
 * text of each call site (below) so a hot statement costs little more than a hand-written string
 * (docs/performance.md), and refuses an empty `not in` list; a general-purpose tag would need all
 * of that wrapped around it.
 */

/** A bound value: what both drivers take for a `?`. A `limit ?`/`offset ?` takes countParam's bigint. */
export type Value = string | number | bigint | boolean | null | undefined | Uint8Array;

/** Something that stands for SQL text of its own when interpolated: a table is its name. */
export interface SqlSource {
  readonly [toSql]: Sql;
}
export const toSql: unique symbol = Symbol('sql');

/** What a template takes between its strings. */
export type Part = Value | readonly Value[] | Sql<unknown> | SqlSource;

/** A row of a statement whose select list does not say what it holds. */
export type Row = Record<string, unknown>;

/**
 * A statement or a piece of one: its text with `?` for each value, and the values in order.
 * `R` is the row it reads: a template with a `fields({...})` select list carries that list's row,
 * so `db.query(statement)` returns it without a type written at the call.
 */
export class Sql<R = Row> {
  declare readonly __row: R;
  readonly text: string;
  readonly values: Value[];

  constructor(text: string, values: Value[]) {
    this.text = text;
    this.values = values;
  }
}

const NO_VALUES: Value[] = [];

/**
 * What one call site built: its text, and per interpolation the text a fragment put there
 * (undefined where a value was bound). A later call with fragments of the same texts and no list
 * reuses the text: same string, so the prepared-statement caches find it without hashing a new one.
 */
interface Shape {
  text: string;
  fragments: (string | undefined)[];
}
/** The shapes kept per call site: a site choosing between a few fragments (`>=` or `<=`) keeps each. */
const SHAPES_PER_SITE = 4;
const shapes = new WeakMap<TemplateStringsArray, Shape[]>();

function fragmentOf(part: Part): Sql<unknown> | undefined {
  if (typeof part !== 'object' || part === null || part instanceof Uint8Array) return undefined;
  if (part instanceof Sql) return part as Sql<unknown>;
  return toSql in part ? (part as SqlSource)[toSql] : undefined;
}

/** The row of the `fields` select list among a template's parts, or any row where there is none. */
type RowIn<X> = X extends Fields<infer R> ? R : never;
export type RowOf<P extends readonly unknown[]> = [RowIn<P[number]>] extends [never] ? Row : RowIn<P[number]>;

export function sql<P extends Part[]>(strings: TemplateStringsArray, ...parts: P): Sql<RowOf<P>> {
  const seen = shapes.get(strings);
  if (seen !== undefined) {
    for (const shape of seen) {
      const values = reuse(shape, parts);
      if (values) return new Sql<RowOf<P>>(shape.text, values);
    }
  }
  return build(strings, parts, seen) as Sql<RowOf<P>>;
}

/** The values of a call that fits its site's shape, or undefined when it does not. */
function reuse(shape: Shape, parts: Part[]): Value[] | undefined {
  const values: Value[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (Array.isArray(part)) return undefined;
    const fragment = fragmentOf(part);
    if (fragment === undefined) {
      if (shape.fragments[i] !== undefined) return undefined;
      values.push(part as Value);
    } else {
      if (shape.fragments[i] !== fragment.text) return undefined;
      for (const v of fragment.values) values.push(v);
    }
  }
  return values;
}

function build(strings: TemplateStringsArray, parts: Part[], seen: Shape[] | undefined): Sql {
  let text = strings[0]!;
  const values: Value[] = [];
  const fragments: (string | undefined)[] = [];
  let list = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const fragment = fragmentOf(part);
    if (fragment !== undefined) {
      text += fragment.text;
      for (const v of fragment.values) values.push(v);
    } else if (Array.isArray(part)) {
      list = true;
      text += listText(part as readonly Value[], text);
      for (const v of part as readonly Value[]) values.push(v);
    } else {
      text += '?';
      values.push(part as Value);
    }
    fragments.push(fragment?.text);
    text += strings[i + 1]!;
  }
  // Past a few shapes a site's fragments vary (a filter of many options): it is built every time.
  if (!list) {
    if (seen === undefined) shapes.set(strings, [{ text, fragments }]);
    else if (seen.length < SHAPES_PER_SITE) seen.push({ text, fragments });
  }
  return new Sql(text, values);
}

/**
 * `(?, ?, ?)` for a list. An empty one is `(null)`: `x in (null)` matches no row on both
 * databases (`in ()` is a syntax error on MySQL). `x not in (null)` would match none either
 * where every row was meant, so an empty list after `not in` is refused: leave the condition out.
 */
function listText(list: readonly Value[], before: string): string {
  if (list.length === 0) {
    if (/\bnot\s+in\s*$/i.test(before)) throw new TypeError('An empty list after NOT IN matches no row: leave the condition out instead.');
    return '(null)';
  }
  return `(${'?, '.repeat(list.length - 1)}?)`;
}

/** Trusted text, never a value: constants of the code such as `db.forUpdate`. */
export function raw(text: string): Sql {
  return new Sql(text, NO_VALUES);
}

/** Nothing: a condition or clause left out. */
export const empty: Sql = raw('');

/** The fragments with `separator` between them (`join(conditions, ' and ')`). */
export function join(fragments: readonly Sql<unknown>[], separator: string): Sql {
  if (fragments.length === 1) return fragments[0]! as Sql;
  // One pass, no lists in between: a transfer's wallets are joined on every send.
  let text = '';
  const values: Value[] = [];
  for (let i = 0; i < fragments.length; i++) {
    const f = fragments[i]!;
    text += i === 0 ? f.text : separator + f.text;
    for (const v of f.values) values.push(v);
  }
  return new Sql(text, values);
}

/**
 * `where a and b` of the conditions given, or nothing when none is (optional filters):
 * `where(status && sql\`${T.c.status} = ${status}\`, sql\`${T.c.isActive} = 1\`)`.
 */
export function where(...conditions: (Sql<unknown> | false | undefined | null | '' | 0)[]): Sql {
  const given = conditions.filter((c): c is Sql<unknown> => c instanceof Sql && c.text !== '');
  if (given.length === 0) return empty;
  const all = join(given, ' and ');
  return new Sql(`where ${all.text}`, all.values);
}

/** A quoted identifier (column or table name) from the code's own table descriptions. */
export function identifier<V = unknown>(name: string): Expr<V> {
  return new Expr<V>(`\`${name}\``, NO_VALUES);
}

/**
 * An expression whose value reads back as `V` (what the driver gives: a boolean column is 0 or
 * 1): a table's columns (`T.c.stock`), `count()`, `sum()`, or any fragment given a type by `typed`.
 */
export class Expr<V> extends Sql<never> {
  declare readonly __value: V;
}

/** A fragment whose value the code knows: `typed<string | null>(sql\`max(${T.c.day})\`)`. */
export function typed<V>(fragment: Sql<unknown>): Expr<V> {
  return new Expr<V>(fragment.text, fragment.values);
}

/** `count(*)`, or `count(expression)`: a number on both drivers. */
export function count(of?: Sql<unknown>): Expr<number> {
  return of === undefined ? COUNT_ALL : new Expr<number>(`count(${of.text})`, of.values);
}
const COUNT_ALL = new Expr<number>('count(*)', NO_VALUES);

/** `sum(expression)`: MySQL gives a decimal as text, SQLite a number, both null over no row: read it with Number(). */
export function sum(of: Sql<unknown>): Expr<number | string | null> {
  return new Expr<number | string | null>(`sum(${of.text})`, of.values);
}

/** A select list whose rows have the names and value types of its expressions. */
export class Fields<R> extends Sql<never> {
  declare readonly __fields: R;
}

/** What a select list names: expressions with a known value type. */
type Named = Record<string, Expr<unknown>>;
type FieldsRow<F extends Named> = { [K in keyof F]: F[K] extends Expr<infer V> ? V : never };

/**
 * The select list `<expression> as name, …` of a read whose rows are objects
 * (`db.query(sql\`select ${fields({ userId: W.c.userId, n: count() })} from ${W} …\`)`): the rows'
 * names and value types come from this one declaration, and a statement holding it returns them.
 * A hot statement keeps its list in a constant of its module, so its text is made once.
 */
export function fields<F extends Named>(named: F): Fields<FieldsRow<F>> {
  const parts: string[] = [];
  const values: Value[] = [];
  for (const [name, expr] of Object.entries(named)) {
    if (!/^[a-z_][a-z0-9_]*$/i.test(name)) throw new TypeError(`Not a field name: ${name}`);
    parts.push(`${expr.text} as \`${name}\``);
    for (const v of expr.values) values.push(v);
  }
  return new Fields<FieldsRow<F>>(parts.join(', '), values);
}
