/**
 * Console staff from the command line (the first admin cannot be made in a console nobody can
 * sign in to yet):
 *   npm run console -- admin <username> [--email <address>]     grants the first role of plugins.console.adminRoles
 *   npm run console -- support <username> [--email <address>]   grants the first role of plugins.console.supportRoles
 *   npm run console -- revoke <username> <role-slug>            takes a role away
 * A granted role is created when it does not exist yet; so is the account, with a password asked
 * on the terminal (read from stdin when it is not a terminal). It goes through the users and auth
 * features' services, on the database and config the server uses.
 */
import { createInterface } from 'node:readline';
import { userInfo } from 'node:os';
import { buildApp } from '../../core/app.ts';
import { auditRef } from '../../core/audit.ts';
import { commandLine, usage } from '../../core/cli/args.ts';
import { ConfigError } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';
import { authRef } from '../auth/contract.ts';
import { usersRef } from '../users/contract.ts';

const USAGE = 'usage: npm run console -- admin <username> [--email <address>] | support <username> [--email <address>] | revoke <username> <role-slug>';
const args = commandLine(USAGE, { email: { type: 'string' } });
const [level, username, slugArg, ...rest] = args.positionals;
const valid =
  level === 'revoke' ? !!slugArg && !rest.length && args.values.email === undefined : (level === 'admin' || level === 'support') && slugArg === undefined;
if (!valid || !username) usage(USAGE);

/** One line from the terminal without echoing it, or from piped stdin. */
async function readPassword(prompt: string): Promise<string> {
  const tty = process.stdin.isTTY;
  if (tty) process.stdout.write(prompt);
  // A terminal is put in raw mode with nothing to echo to, so the password is not shown.
  const lines = createInterface({ input: process.stdin, terminal: tty });
  lines.on('SIGINT', () => process.exit(130));
  try {
    const line = await new Promise<string | undefined>((resolve) => {
      lines.once('line', resolve);
      lines.once('close', () => resolve(undefined));
    });
    if (tty) process.stdout.write('\n');
    if (line === undefined) throw new ConfigError('No password was given.');
    return line;
  } finally {
    lines.close();
  }
}

/** Who runs the command, for the audit log: the login name, when the system can say. */
function operator(): string {
  try {
    return `${userInfo().username} (command line)`;
  } catch {
    return 'command line';
  }
}

let app: Awaited<ReturnType<typeof buildApp>>;
try {
  app = await buildApp({ logger: false });
  await app.ready();
} catch (err) {
  console.error(`Cannot open the server's database: ${(err as Error).message}`);
  process.exit(err instanceof ConfigError ? 1 : 3);
}
try {
  if (!app.features.includes('console')) throw new ConfigError('The console feature is disabled (plugins.console.enabled = false).');
  const users = app.services.get(usersRef);
  // The audit log names the command line's operator by their login on this machine.
  await app.services.get(auditRef).as({ kind: 'cli', name: operator() }, async () => {
    if (level === 'revoke') {
      const user = await users.requireByUsername(username);
      const role = await users.findRoleBySlug(slugArg!);
      if (!role) throw new ConfigError(`No role has the slug "${slugArg}".`);
      if (!(await users.revokeRole(user.id, role.id))) throw new ConfigError(`${user.username} does not hold the role "${role.slug}".`);
      console.log(`${user.username} no longer holds the role "${role.slug}".`);
    } else {
      const opts = app.featureContext('console').options as { adminRoles: string[]; supportRoles: string[] };
      const slug = (level === 'admin' ? opts.adminRoles : opts.supportRoles)[0];
      if (!slug) throw new ConfigError(`plugins.console.${level}Roles is empty: name a role slug there first.`);
      let user = await users.findByUsername(username);
      if (!user) {
        const password = await readPassword(`No account is named "${username}": a password for the new account (not shown): `);
        const { userId } = await app.services.get(authRef).createAccount({ username, password, email: args.values.email });
        user = await users.requireById(userId);
        console.log(`Made the account "${user.username}".`);
      }
      const role =
        (await users.findRoleBySlug(slug)) ??
        (await users.createRole({
          name: level === 'admin' ? 'Console admin' : 'Console support',
          slug,
          priority: 0,
          chatRoleID: '',
          usernameCSS: null,
          badgeCSS: null,
        }));
      // The operator at the server's command line is the first admin.
      await users.grantRole(user.id, role.id, undefined, { admin: true });
      console.log(`${user.username} now holds the role "${role.slug}": they may sign in to /console as ${level}.`);
    }
  });
} catch (err) {
  if (!(err instanceof DomainError || err instanceof ConfigError)) throw err;
  console.error(err.message);
  process.exitCode = 1;
} finally {
  await app.close();
}
