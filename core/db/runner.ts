/** What the facade needs of a connection, whichever the database: statements run with their values bound. */

export interface RunResult {
  affectedRows: number;
  insertId: number;
}

/** How busy the connections are, for the metrics: in use, idle, and callers waiting for one. */
export interface PoolStats {
  inUse: number;
  idle: number;
  waiting: number;
}

/**
 * One connection's way of running a bound statement. Values travel apart from the SQL text on
 * both dialects: SQLite binds them to a prepared statement, MySQL/MariaDB to a server-side
 * prepared statement (`execute`). No value is ever written into SQL text, so no sql_mode or
 * character set can turn one into SQL.
 */
export interface Runner {
  all(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  arrays(sql: string, params: unknown[]): Promise<unknown[][]>;
  run(sql: string, params: unknown[]): Promise<RunResult>;
}
