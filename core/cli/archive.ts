/**
 * Archives of the community's data, on either database (docs/export-format.md):
 *   npm run export [-- FILE]   everything the host and the enabled features own, from one
 *                              consistent snapshot while the server keeps serving.
 *   npm run import -- FILE     into an empty install (DATABASE_URL), migrated first; refused while
 *                              a server has the database open, or when it holds any data.
 * Without FILE an export goes to exports/<database>-<UTC time>.tar.gz. A bar shows the progress
 * on a terminal only, so logs and pipes get the closing line alone.
 */
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { archiveOwners } from '../archive/hook.ts';
import { exportArchive, type Progress } from '../archive/export.ts';
import { ArchiveRefused } from '../archive/format.ts';
import { ImportRefused, importArchive } from '../archive/import.ts';
import { openFeaturesDatabase } from '../boot.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrations.ts';
import { parseDatabaseUrl, type DatabaseUrl } from '../db/url.ts';
import { discoverFeatures } from '../discover.ts';
import { selectEnabled } from '../features.ts';
import { migrations } from '../migrations/index.ts';
import { serverHasOpen } from '../server-mark.ts';
import { commandLine, usage } from './args.ts';

const USAGE = 'usage: npm run export [-- FILE] | npm run import -- FILE';
const {
  positionals: [command, fileArg, ...extra],
} = commandLine(USAGE, {});
if (!(command === 'export' || (command === 'import' && fileArg)) || extra.length) usage(USAGE);

/** A bar redrawn in place on a terminal, at most every 100 ms; nothing elsewhere. */
function progressBar(): Progress | undefined {
  if (!process.stderr.isTTY) return undefined;
  let last = 0;
  return (done, total, what) => {
    const now = Date.now();
    if (now - last < 100 && done < total) return;
    last = now;
    const share = total ? done / total : 1;
    const filled = Math.round(share * 30);
    process.stderr.write(`\r[${'#'.repeat(filled)}${' '.repeat(30 - filled)}] ${Math.floor(share * 100)}% ${done}/${total} ${what}`.padEnd(100).slice(0, 100));
  };
}

function defaultFile(target: DatabaseUrl): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const name = target.dialect === 'sqlite' ? basename(target.file!).replace(/\.[^.]*$/, '') : target.dbName!;
  return `exports/${name}-${stamp}.tar.gz`;
}

try {
  const config = loadConfig();
  const target = parseDatabaseUrl(config.database.url);
  const features = selectEnabled(await discoverFeatures(config), config);
  const owners = archiveOwners(features, target.file);
  const bar = progressBar();
  if (command === 'export') {
    const file = resolve(fileArg ?? defaultFile(target));
    const defined = [...migrations, ...features.flatMap((f) => f.def.migrations ?? [])].map((m) => m.name);
    const manifest = await exportArchive(target, owners, defined, file, bar);
    if (bar) process.stderr.write('\n');
    const rows = manifest.parts.reduce((n, p) => n + (p.kind === 'table' ? p.rows : 0), 0);
    console.log(`Exported ${rows} rows and ${manifest.parts.filter((p) => p.kind === 'file').length} files to ${file}`);
  } else {
    const file = resolve(fileArg!);
    if (!existsSync(file)) throw new ImportRefused(`No archive at ${file}.`);
    if (target.dialect === 'sqlite' && existsSync(target.file!) && (await serverHasOpen(target))) {
      throw new ImportRefused('A server has this database open: stop it, then import.');
    }
    const db = await openFeaturesDatabase(config, features, console.error);
    try {
      if (target.dialect === 'mysql' && (await serverHasOpen(target))) throw new ImportRefused('A server has this database open: stop it, then import.');
      await migrate(db, { leaseSeconds: config.database.migrationLockSeconds, say: console.error });
      const done = await importArchive(db, owners, file, bar);
      if (bar) process.stderr.write('\n');
      console.log(`Imported ${done.rows} rows and ${done.files} files from ${file}`);
    } finally {
      await db.close();
    }
  }
} catch (err) {
  const known = err instanceof ConfigError || err instanceof ArchiveRefused;
  console.error(known ? `Cannot ${command}: ${(err as Error).message}` : err);
  process.exitCode = known ? 2 : 1;
}
