/**
 * Console staff from the command line (the first admin cannot be made in a console nobody can
 * sign in to yet):
 *   npm run console -- admin <username>     grants the first role of plugins.console.adminRoles
 *   npm run console -- support <username>   grants the first role of plugins.console.supportRoles
 * The role is created when it does not exist yet. It goes through the users feature's service,
 * on the database and config the server uses.
 */
import { buildApp } from '../../core/app.ts';
import { ConfigError } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';
import { commandLine, usage } from '../../core/cli/args.ts';
import { usersRef } from '../users/contract.ts';

const USAGE = 'usage: npm run console -- admin <username> | support <username>';
const { positionals: [level, username, ...extra] } = commandLine(USAGE, {});
if ((level !== 'admin' && level !== 'support') || !username || extra.length) usage(USAGE);

let app;
try {
  app = await buildApp({ logger: false });
  await app.ready();
} catch (err) {
  console.error(`Cannot open the server's database: ${(err as Error).message}`);
  process.exit(err instanceof ConfigError ? 1 : 3);
}
try {
  if (!app.features.includes('console')) throw new ConfigError('The console feature is disabled (plugins.console.enabled = false).');
  const opts = app.featureContext('console').options as { adminRoles: string[]; supportRoles: string[] };
  const slug = (level === 'admin' ? opts.adminRoles : opts.supportRoles)[0];
  if (!slug) throw new ConfigError(`plugins.console.${level}Roles is empty: name a role slug there first.`);
  const users = app.services.get(usersRef);
  const user = await users.requireByUsername(username);
  const role = await users.findRoleBySlug(slug) ?? await users.createRole({
    name: level === 'admin' ? 'Console admin' : 'Console support', slug, priority: 0, chatRoleID: '', usernameCSS: null, badgeCSS: null,
  });
  // The operator at the server's command line is the first admin.
  await users.grantRole(user.id, role.id, undefined, { admin: true });
  console.log(`${user.username} now holds the role "${role.slug}": they may sign in to /console as ${level}.`);
} catch (err) {
  if (!(err instanceof DomainError || err instanceof ConfigError)) throw err;
  console.error(err.message);
  process.exitCode = 1;
} finally {
  await app.close();
}
