import { defineMigration } from '../../../core/db.ts';

/**
 * The lower-cased lookup keys compare byte for byte on MySQL/MariaDB too (SQLite's `=` does
 * already): under the default collation `alice `, `ålice` and `alıce` matched `alice`. VARBINARY,
 * because the `_bin` collations still ignore trailing spaces (PAD SPACE) on both servers.
 * 255 bytes: lower-casing may lengthen a name, and a character takes up to 4 bytes.
 */
export default defineMigration({
  name: '20261123074000_users_binary_keys',
  sqlite: [],
  mysql: ['alter table `users_accounts` modify `username_key` varbinary(255) not null, modify `email_key` varbinary(766) null'],
});
