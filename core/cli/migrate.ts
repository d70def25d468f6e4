/**
 * `npm run migrate`: applies the pending migrations of the core and every enabled feature.
 * `npm run migrate -- status`: lists the applied and the pending ones, changing nothing.
 */
import { commandLine, usage } from './args.ts';
import { openFeaturesDatabase } from '../boot.ts';
import { loadConfig, ConfigError } from '../config.ts';
import { migrate } from '../db/migrations.ts';
import { discoverFeatures } from '../discover.ts';
import { selectEnabled } from '../features.ts';

const USAGE = 'usage: npm run migrate [-- status]';
const {
  positionals: [command, ...extra],
} = commandLine(USAGE, {});
if ((command !== undefined && command !== 'status') || extra.length) usage(USAGE);

try {
  const config = loadConfig();
  const features = selectEnabled(await discoverFeatures(config), config);
  const db = await openFeaturesDatabase(config, features, console.error);
  try {
    if (command === 'status') {
      const applied = await (await db.orm()).migrator.getExecuted();
      const pending = await (await db.orm()).migrator.getPending();
      for (const m of applied) console.log(`applied\t${m.name}`);
      for (const m of pending) console.log(`pending\t${m.name}`);
      console.log(`${applied.length} applied, ${pending.length} pending.`);
    } else {
      const done = await migrate(db, { leaseSeconds: config.database.migrationLockSeconds, say: console.error });
      console.log(done.length ? `Applied ${done.length} migration(s):\n${done.join('\n')}` : 'The database is up to date.');
    }
  } finally {
    await db.close();
  }
} catch (err) {
  console.error(err instanceof ConfigError ? `Cannot migrate: ${err.message}` : err);
  process.exitCode = 1;
}
