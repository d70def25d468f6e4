/**
 * `npm run import:leaderos -- URL [--dry-run]`: brings a LeaderOS site's community into this install
 * through the site's public API, with the owner's key in LEADEROS_API_KEY (never on the command
 * line, where other users of the machine see it). Safe to run again; prints the report.
 */
import { buildApp } from '../../core/app.ts';
import { commandLine, usage } from '../../core/cli/args.ts';
import { ConfigError } from '../../core/config.ts';
import { importsRef, type ImportReport } from './contract.ts';
import { SourceError } from './leaderos.ts';

const USAGE = 'usage: LEADEROS_API_KEY=<key> npm run import:leaderos -- <site URL> [--dry-run]';
const {
  positionals: [url, ...extra],
  values,
} = commandLine(USAGE, { 'dry-run': { type: 'boolean' } });
if (!url || extra.length || !/^https?:\/\/\S+$/.test(url)) usage(USAGE);
const apiKey = process.env.LEADEROS_API_KEY;
if (!apiKey) usage(USAGE);

function print(report: ImportReport): void {
  const kinds = [...new Set([...Object.keys(report.created), ...Object.keys(report.skipped)])].sort();
  console.log(`${report.dryRun ? 'Dry run: nothing written. Would bring' : 'Brought'} from ${report.source}:`);
  for (const kind of kinds) console.log(`  ${kind}: ${report.created[kind] ?? 0} new, ${report.skipped[kind] ?? 0} brought before`);
  if (report.notBrought.length) console.log(`Not brought:\n${report.notBrought.map((line) => `  - ${line}`).join('\n')}`);
}

const app = await buildApp({ logger: false }).catch((err: Error) => {
  console.error(`Cannot open the server's database: ${err.message}`);
  process.exit(err instanceof ConfigError ? 1 : 3);
});
try {
  await app.ready();
  const imports = app.services.find(importsRef);
  if (!imports) throw new ConfigError('The imports feature is disabled (plugins.imports.enabled = false).');
  print(await imports.fromLeaderOs({ url, apiKey }, { dryRun: values['dry-run'] === true }));
} catch (err) {
  const known = err instanceof ConfigError || err instanceof SourceError;
  console.error(known ? `Cannot import: ${(err as Error).message}` : err);
  process.exitCode = known ? 2 : 1;
} finally {
  await app.close();
}
