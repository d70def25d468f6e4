/**
 * API keys from the command line:
 *   npm run keys -- create <name> [--admin | --scope S …] [--client-codes]
 *                                             prints the new key once; --scope takes
 *                                             `<feature>` or `<feature>:<action>` (repeat it or
 *                                             separate with commas); neither flag: `api`;
 *                                             --client-codes: errors carry the Java clients' codes
 *   npm run keys -- client-codes <name> on|off
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
    const named = flags.flatMap((f, i) => (flags[i - 1] === '--scope' ? f.split(',') : [])).filter(Boolean);
    const scopes: Scope[] = flags.includes('--admin') ? ['api', 'admin'] : named.length ? named : ['api'];
    const clientCodes = flags.includes('--client-codes');
    const key = await keys.create(name, scopes, { clientCodes });
    console.log(`Created key "${name}" (${scopes.join(', ')}${clientCodes ? '; client codes' : ''}). It is shown only now:\n${key}`);
  } else if (command === 'client-codes' && name && (flags[0] === 'on' || flags[0] === 'off')) {
    if (await keys.setClientCodes(name, flags[0] === 'on')) {
      console.log(`Key "${name}" now answers errors with ${flags[0] === 'on' ? 'the Java clients\' codes' : 'our own codes (the Java clients\' only to a Java/<version> User-Agent)'}.`);
    } else {
      console.error(`No active key named "${name}".`);
      process.exitCode = 1;
    }
  } else if (command === 'list') {
    for (const k of await keys.list()) {
      console.log(`${k.name}\t${k.scopes}${k.clientCodes ? '\tclient codes' : ''}\tcreated ${k.createdAt}\tlast used ${k.lastUsedAt ?? 'never'}${k.revokedAt ? `\trevoked ${k.revokedAt}` : ''}`);
    }
  } else if (command === 'revoke' && name) {
    if (await keys.revoke(name)) console.log(`Revoked "${name}".`);
    else {
      console.error(`No active key named "${name}".`);
      process.exitCode = 1;
    }
  } else {
    console.error('usage: npm run keys -- create <name> [--admin | --scope <feature>[:<action>] …] [--client-codes] | client-codes <name> on|off | list | revoke <name>');
    process.exitCode = 2;
  }
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
} finally {
  await db.close();
}
