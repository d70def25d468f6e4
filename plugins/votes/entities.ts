import { defineEntity, p } from '../../core/table.ts';

export const VotesLink = defineEntity({
  name: 'VotesLink',
  tableName: 'votes_links',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
    /** May hold `{username}`, filled in per request. */
    link: p.string().length(2048),
  },
});

export const entities = [VotesLink];
