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

export const entities = [ImportsLink];
