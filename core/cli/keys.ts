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
import { ApiKeys, type Scope } from '../api-keys.ts';
import { AuditLog } from '../audit.ts';
import { connectAtBoot } from '../boot.ts';
import { loadConfig } from '../config.ts';
import { migrate } from '../db/migrations.ts';
import { openDatabase } from '../db/open.ts';
import { coreEntities } from '../entities.ts';
import { migrations } from '../migrations/index.ts';
import { commandLine, usage } from './args.ts';

const USAGE =
  'usage: npm run keys -- create <name> [--admin | --scope <feature>[:<action>] …] [--client-codes] | client-codes <name> on|off | list | revoke ' + '<name>';
const {
  positionals: [command, name, ...rest],
  values,
} = commandLine(USAGE, {
  admin: { type: 'boolean' },
  scope: { type: 'string', multiple: true },
  'client-codes': { type: 'boolean' },
});
const onOff = rest[0] === 'on' || rest[0] === 'off';
const valid =
  command === 'list'
    ? !name && !rest.length
    : command === 'client-codes'
      ? !!name && rest.length === 1 && onOff
      : (command === 'create' || command === 'revoke') && !!name && !rest.length;
if (!valid || (command !== 'create' && Object.keys(values).length)) usage(USAGE);

function noActiveKey(): void {
  console.error(`No active key named "${name}".`);
  process.exitCode = 1;
}

const config = loadConfig();
const db = await connectAtBoot(config.database, () => openDatabase({ config: config.database, entities: coreEntities, migrations }), console.error);
try {
  await migrate(db);
  const keys = new ApiKeys(db, new AuditLog(db), undefined, 0);
  if (command === 'create') {
    const named = (values.scope ?? []).flatMap((s) => s.split(',')).filter(Boolean);
    const scopes: Scope[] = values.admin ? ['api', 'admin'] : named.length ? named : ['api'];
    const clientCodes = values['client-codes'] === true;
    const key = await keys.create(name!, scopes, { clientCodes });
    console.log(`Created key "${name}" (${scopes.join(', ')}${clientCodes ? '; client codes' : ''}). It is shown only now:\n${key}`);
  } else if (command === 'client-codes') {
    if (await keys.setClientCodes(name!, rest[0] === 'on')) {
      console.log(
        `Key "${name}" now answers errors with ${
          rest[0] === 'on' ? "the Java clients' codes" : "our own codes (the Java clients' only to a " + 'Java/<version> User-Agent)'
        }.`,
      );
    } else noActiveKey();
  } else if (command === 'list') {
    for (const k of await keys.list()) {
      console.log(
        `${k.name}\t${k.scopes}${k.clientCodes ? '\tclient codes' : ''}\tcreated ${k.createdAt}\tlast used ` +
          `${k.lastUsedAt ?? 'never'}${k.revokedAt ? `\trevoked ${k.revokedAt}` : ''}`,
      );
    }
  } else if (await keys.revoke(name!)) {
    console.log(`Revoked "${name}".`);
  } else noActiveKey();
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
} finally {
  await db.close();
}
