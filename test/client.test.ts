/**
 * The typed client (client/): its types are those of today's OpenAPI document, and its example
 * runs against a real server.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rootDir } from '../core/config.ts';
import { sharedDatabaseUrl, startServer } from './helper.ts';

const run = promisify(execFile);

t.test('client/schema.d.ts is generated from the current document', async (t) => {
  await t.resolves(
    run(process.execPath, [join(rootDir, 'scripts/generate-client.ts'), '--check'], { cwd: rootDir }),
    'up to date (else: npm run client:generate)',
  );
  await t.rejects(
    run(process.execPath, [join(rootDir, 'scripts/generate-client.ts'), '--chek'], { cwd: rootDir }),
    { code: 2, stderr: /^usage: npm run client:generate/ },
    'a mistyped flag writes nothing',
  );
});

t.test('the example registers a player, adds credits and reads them back through the typed client', async (t) => {
  const { address } = await startServer(t, { DATABASE_URL: await sharedDatabaseUrl(t), API_KEY: 'client-example-key' });
  const { stdout } = await run(process.execPath, [join(rootDir, 'client/example.ts'), 'Alex'], {
    cwd: rootDir,
    env: { ...process.env, API_URL: address, API_KEY: 'client-example-key' },
  });
  t.equal(stdout, 'Alex has 12.50 USD (12.5 as a number)\n');
  const again = await run(process.execPath, [join(rootDir, 'client/example.ts'), 'Alex'], {
    cwd: rootDir,
    env: { ...process.env, API_URL: address, API_KEY: 'client-example-key' },
  }).catch((err: { stderr: string }) => err);
  t.match(
    (again as { stderr: string }).stderr,
    /register: USERNAME_ALREADY_EXIST The username "Alex" is taken\./,
    'an API error reaches the caller as its code and message',
  );
});
