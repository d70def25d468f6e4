import { defineMigration } from '../db.ts';

export default defineMigration({
  name: '20261123075128_core_api_keys_scopes',
  // SQLite's text has no length to widen.
  sqlite: [],
  mysql: ['alter table `core_api_keys` modify `scopes` varchar(255) not null'],
});
