import { defineMigration } from '../db.ts';

export default defineMigration({
  name: '20261123074603_core_api_keys_last_used',
  sqlite: ['alter table `core_api_keys` add column `last_used_at` text null'],
  mysql: ['alter table `core_api_keys` add `last_used_at` varchar(19) null'],
});
