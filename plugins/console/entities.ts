import { defineEntity, p } from '../../core/table.ts';

/** A signed-in staff member's console session; only the token's SHA-256 is stored. */
export const ConsoleSession = defineEntity({
  name: 'ConsoleSession',
  tableName: 'console_sessions',
  properties: {
    id: p.integer().primary().autoincrement(),
    tokenHash: p.string().length(64).unique(),
    userId: p.integer().index(),
    /** Every change the session posts must carry it (CSRF). */
    csrfToken: p.string().length(64),
    ip: p.string().length(45),
    createdAt: p.string().length(19),
    /** Sessions idle past plugins.console.idleMinutes end. */
    lastSeenAt: p.string().length(19).index(),
  },
});

export const entities = [ConsoleSession];
