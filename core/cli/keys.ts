/**
 * API keys from the command line:
 *   npm run keys -- create <name> [--admin]   prints the new key once
 *   npm run keys -- list
 *   npm run keys -- revoke <name>
 */
import { ApiKeys, CoreApiKey, type Scope } from '../api-keys.ts';
import { connectAtBoot } from '../boot.ts';
import { loadConfig } from '../config.ts';
import { openDatabase, migrate } from '../db.ts';
import { migrations } from '../migrations/index.ts';
import { CoreSetting } from '../settings.ts';

const [command, name, ...flags] = process.argv.slice(2);
const config = loadConfig();
const db = await connectAtBoot(config.database, () => openDatabase({ config: config.database, entities: [CoreSetting, CoreApiKey], migrations }), console.error);
try {
  await migrate(db);
  const keys = new ApiKeys(db, undefined, 0);
  if (command === 'create' && name) {
    const scopes: Scope[] = flags.includes('--admin') ? ['api', 'admin'] : ['api'];
    const key = await keys.create(name, scopes);
    console.log(`Created key "${name}" (${scopes.join(', ')}). It is shown only now:\n${key}`);
  } else if (command === 'list') {
    for (const k of await keys.list()) console.log(`${k.name}\t${k.scopes}\tcreated ${k.createdAt}${k.revokedAt ? `\trevoked ${k.revokedAt}` : ''}`);
  } else if (command === 'revoke' && name) {
    console.log(await keys.revoke(name) ? `Revoked "${name}".` : `No active key named "${name}".`);
  } else {
    console.error('usage: npm run keys -- create <name> [--admin] | list | revoke <name>');
    process.exitCode = 2;
  }
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
} finally {
  await db.close();
}
