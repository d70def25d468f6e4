/** DATABASE_URL: which database, and where. */

export type Dialect = 'sqlite' | 'mysql';

export interface DatabaseUrl {
  dialect: Dialect;
  /** SQLite file or `:memory:`. */
  file?: string;
  url?: string;
  dbName?: string;
}

export function parseDatabaseUrl(url: string): DatabaseUrl {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    if (!file) throw new Error('DATABASE_URL: sqlite: needs a file path or :memory:');
    return { dialect: 'sqlite', file };
  }
  if (/^(mysql|mariadb):\/\//.test(url)) {
    const parsed = new URL(url);
    const dbName = decodeURIComponent(parsed.pathname.slice(1));
    if (!dbName) throw new Error('DATABASE_URL: a mysql:// URL needs a database name');
    return { dialect: 'mysql', url: url.replace(/^mariadb:/, 'mysql:'), dbName };
  }
  throw new Error(`DATABASE_URL must start with sqlite:, mysql:// or mariadb:// (got "${url.split(':')[0]}:")`);
}
