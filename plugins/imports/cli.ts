/**
 * Brings a community in from another store; safe to run again, prints the report. Keys come from
 * the environment (never the command line, where other users of the machine see them):
 * - `npm run import:leaderos -- URL [--dry-run]`, the site's key in LEADEROS_API_KEY;
 * - `npm run import:tebex -- [--csv FILE] [--dry-run]`, the webstore's secret key in TEBEX_SECRET
 *   unless a payments CSV export is given;
 * - `npm run import:craftingstore -- [--csv FILE] [--dry-run]`, its API token in CRAFTINGSTORE_TOKEN.
 */
import { readFileSync } from 'node:fs';
import { buildApp } from '../../core/app.ts';
import { commandLine, usage } from '../../core/cli/args.ts';
import { ConfigError } from '../../core/config.ts';
import { importsRef, type ImportReport, type ImportsService } from './contract.ts';
import { SourceError } from './importer.ts';

const USAGE = [
  'usage: LEADEROS_API_KEY=<key> npm run import:leaderos -- <site URL> [--dry-run]',
  '       TEBEX_SECRET=<key> npm run import:tebex -- [--dry-run]',
  '       npm run import:tebex -- --csv <payments export.csv> [--dry-run]',
  '       CRAFTINGSTORE_TOKEN=<token> npm run import:craftingstore -- [--dry-run]',
  '       npm run import:craftingstore -- --csv <payments export.csv> [--dry-run]',
].join('\n');
const {
  positionals: [store, ...args],
  values,
} = commandLine(USAGE, { 'dry-run': { type: 'boolean' }, csv: { type: 'string' } });
const dryRun = values['dry-run'] === true;

/** The import the command line asks for, its keys and files read before the server opens. */
function chosen(): (imports: ImportsService) => Promise<ImportReport> {
  if (store === 'leaderos') {
    const [url, ...extra] = args;
    const apiKey = process.env.LEADEROS_API_KEY;
    if (!url || extra.length || values.csv || !/^https?:\/\/\S+$/.test(url) || !apiKey) usage(USAGE);
    return (imports) => imports.fromLeaderOs({ url, apiKey }, { dryRun });
  }
  if (store === 'tebex' && !args.length) {
    if (values.csv) {
      const csv = readFileSync(values.csv, 'utf8');
      return (imports) => imports.fromTebex({ csv }, { dryRun });
    }
    const secret = process.env.TEBEX_SECRET;
    if (!secret) usage(USAGE);
    return (imports) => imports.fromTebex({ secret }, { dryRun });
  }
  if (store === 'craftingstore' && !args.length) {
    if (values.csv) {
      const csv = readFileSync(values.csv, 'utf8');
      return (imports) => imports.fromCraftingStore({ csv }, { dryRun });
    }
    const token = process.env.CRAFTINGSTORE_TOKEN;
    if (!token) usage(USAGE);
    return (imports) => imports.fromCraftingStore({ token }, { dryRun });
  }
  return usage(USAGE);
}

function print(report: ImportReport): void {
  const kinds = [...new Set([...Object.keys(report.created), ...Object.keys(report.skipped)])].sort();
  console.log(`${report.dryRun ? 'Dry run: nothing written. Would bring' : 'Brought'} from ${report.source}:`);
  for (const kind of kinds) console.log(`  ${kind}: ${report.created[kind] ?? 0} new, ${report.skipped[kind] ?? 0} brought before`);
  if (report.notBrought.length) console.log(`Not brought:\n${report.notBrought.map((line) => `  - ${line}`).join('\n')}`);
}

const run = (() => {
  try {
    return chosen();
  } catch (err) {
    console.error(`Cannot read ${values.csv}: ${(err as Error).message}`);
    process.exit(2);
  }
})();
const app = await buildApp({ logger: false }).catch((err: Error) => {
  console.error(`Cannot open the server's database: ${err.message}`);
  process.exit(err instanceof ConfigError ? 1 : 3);
});
try {
  await app.ready();
  const imports = app.services.find(importsRef);
  if (!imports) throw new ConfigError('The imports feature is disabled (plugins.imports.enabled = false).');
  print(await run(imports));
} catch (err) {
  const known = err instanceof ConfigError || err instanceof SourceError;
  console.error(known ? `Cannot import: ${(err as Error).message}` : err);
  process.exitCode = known ? 2 : 1;
} finally {
  await app.close();
}
