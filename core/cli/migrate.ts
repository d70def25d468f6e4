/** `npm run migrate`: applies the pending migrations of the core and every enabled feature. */
import { CoreApiKey } from '../api-keys.ts';
import { connectAtBoot } from '../boot.ts';
import { loadConfig, ConfigError } from '../config.ts';
import { openDatabase, migrate } from '../db.ts';
import { discoverFeatures, selectEnabled } from '../features.ts';
import { migrations } from '../migrations/index.ts';
import { CoreSetting } from '../settings.ts';

try {
  const config = loadConfig();
  const features = selectEnabled(await discoverFeatures(config), config);
  const db = await connectAtBoot(config.database, () => openDatabase({
    config: config.database,
    entities: [CoreSetting, CoreApiKey, ...features.flatMap((f) => f.def.entities ?? [])],
    migrations: [...migrations, ...features.flatMap((f) => f.def.migrations ?? [])],
  }), console.error);
  try {
    const done = await migrate(db);
    console.log(done.length ? `Applied ${done.length} migration(s):\n${done.join('\n')}` : 'The database is up to date.');
  } finally {
    await db.close();
  }
} catch (err) {
  console.error(err instanceof ConfigError ? `Cannot migrate: ${err.message}` : err);
  process.exitCode = 1;
}
