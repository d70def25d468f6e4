import { defineEntity, p } from '../../core/table.ts';

/**
 * What an import brought, one row per thing of the source: its unique key is what makes a run
 * safe to repeat (nothing twice) and to resume after an interruption.
 */
export const ImportsLink = defineEntity({
  name: 'ImportsLink',
  tableName: 'imports_links',
  uniques: [{ properties: ['source', 'kind', 'sourceId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    /** The source, e.g. `leaderos:https://shop.example`. */
    source: p.string().length(255),
    /** `user`, `role`, `category`, `product`, `ticket`, `vote-link`, … */
    kind: p.string().length(32),
    sourceId: p.string().length(64),
    /** The row made here; 0 where it is not a row (a role held by a user). */
    localId: p.integer(),
    createdAt: p.string().length(19),
  },
});

/** Each run of an importer, with its report kept: the console lists them, and follows a run while it goes. */
export const ImportsRun = defineEntity({
  name: 'ImportsRun',
  tableName: 'imports_runs',
  properties: {
    id: p.integer().primary().autoincrement(),
    source: p.string().length(255),
    dryRun: p.boolean(),
    /** `running`, `done` or `failed`. */
    status: p.string().length(16).$type<'running' | 'done' | 'failed'>(),
    startedAt: p.string().length(19),
    finishedAt: p.string().length(19).nullable(),
    /** The report as JSON (contract.ts ImportReport), and for a failed run why it stopped. */
    report: p.text().columnType('mediumtext'),
    error: p.string().length(1000).nullable(),
  },
});

export const entities = [ImportsLink, ImportsRun];
