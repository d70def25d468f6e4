import { defineMigration } from '../db.ts';

export default defineMigration({
  name: '20261125183714_core_api_keys_client_codes',
  sqlite: ['alter table `core_api_keys` add column `client_codes` integer not null default false'],
  mysql: ['alter table `core_api_keys` add `client_codes` tinyint(1) not null default false'],
});
