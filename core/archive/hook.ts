/** Who owns what in an archive: the host's tables, then each running feature's (feature-archive.ts). */
import { CoreApiKey } from '../api-keys.ts';
import { CoreAuditLog } from '../audit.ts';
import type { FeatureDefinition, LoadedFeature } from '../features.ts';
import { CoreSetting } from '../settings.ts';
import { Table } from '../table.ts';
import type { AnyTable } from './feature-archive.ts';

/** One feature's share of an archive. */
export interface ArchiveOwner {
  name: string;
  tables: AnyTable[];
  folders: Record<string, string>;
}

/**
 * The host's own data: settings, API keys and the audit log. Rate-limit windows and idempotency
 * keys are minutes of memory about requests, not the community's data, so they stay behind.
 */
const coreTables: AnyTable[] = [CoreSetting, CoreApiKey, CoreAuditLog];

function tablesOf(def: FeatureDefinition): AnyTable[] {
  return def.archive?.tables ?? (def.entities ?? []).filter((e): e is AnyTable => e instanceof Table);
}

/** The host and every running feature, in load order (a feature after those it requires), with what each archives. */
export function archiveOwners(features: LoadedFeature[], databaseFile?: string): ArchiveOwner[] {
  return [
    { name: 'core', tables: coreTables, folders: {} },
    ...features.map((f) => ({
      name: f.def.name,
      tables: tablesOf(f.def),
      folders: f.def.archive?.folders?.(f.options, { databaseFile }) ?? {},
    })),
  ];
}
