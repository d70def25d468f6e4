/**
 * The audit log's page (core/audit.ts): what staff changed, newest first, filtered by who, what
 * and which record, paged by id. Admins only: it shows every change of every section.
 */
import { auditFilter, auditRef, type AuditRow } from '../../core/audit.ts';
import { playerCell, type ConsoleCell, type ConsoleSection } from '../../core/console.ts';
import { displayTimestamp } from '../../core/format.ts';
import { usersRef } from '../users/contract.ts';

const PAGE = 50;

/** "price: 500 → 450; name: VIP → VIP+" for the keys whose values differ (every key when one side is missing). */
export function changes(before: string | null, after: string | null): string {
  const b = (before === null ? {} : JSON.parse(before)) as Record<string, unknown>;
  const a = (after === null ? {} : JSON.parse(after)) as Record<string, unknown>;
  const text = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
  return [...new Set([...Object.keys(b), ...Object.keys(a)])]
    .filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k]))
    .map((k) => `${k}: ${before === null ? text(a[k]) : after === null ? text(b[k]) : `${text(b[k])} → ${text(a[k])}`}`)
    .join('; ');
}

export const auditSection: ConsoleSection = {
  id: 'audit',
  title: 'Audit log',
  order: 90,
  pages(pages, { services, settings }) {
    const audit = services.get(auditRef);
    const users = services.get(usersRef);

    /** A record's cell: a player by name, linked to their page; anything else as its kind and id. */
    const targetCell = (r: AuditRow, names: ReadonlyMap<number, string>): ConsoleCell =>
      r.targetType === 'user' && names.has(Number(r.targetId)) ? playerCell(pages, r.targetId, names) : `${r.targetType} ${r.targetId}`;

    pages.get('', async ({ query }) => {
      const filter = auditFilter(
        {
          actor: query.actor,
          action: query.action,
          targetType: query.targetType,
          targetID: query.targetID,
          before: /^[0-9]{1,15}$/.test(query.before ?? '') ? query.before : undefined,
          limit: String(PAGE),
        },
        PAGE,
      );
      const rows = await audit.list(filter);
      const names = await users.usernames(rows.filter((r) => r.targetType === 'user').map((r) => Number(r.targetId)));
      const tz = settings.get().timezone;
      const kept = Object.fromEntries(['actor', 'action', 'targetType', 'targetID'].filter((k) => query[k]).map((k) => [k, query[k]!]));
      const next = rows.length === PAGE ? `${pages.base}?${new URLSearchParams({ ...kept, before: String(rows.at(-1)!.id) })}` : undefined;
      return {
        title: 'Audit log',
        blocks: [
          {
            kind: 'form',
            id: 'audit-filter',
            title: 'Filter',
            action: pages.base,
            method: 'get',
            submit: 'Filter',
            values: kept,
            fields: [
              { name: 'actor', label: 'Who', type: 'search', hint: "A staff username or an API key's name." },
              { name: 'action', label: 'Action', type: 'search', hint: 'store.order.refund, or the start of one ending in a dot: store.' },
              { name: 'targetType', label: 'Record kind', type: 'search', hint: 'order, product, user, role, apikey, settings' },
              { name: 'targetID', label: 'Record ID', type: 'search' },
            ],
          },
          {
            kind: 'table',
            caption: 'Changes by staff',
            empty: 'No change recorded yet.',
            columns: [
              { key: 'at', label: 'When' },
              { key: 'actor', label: 'Who' },
              { key: 'action', label: 'Action' },
              { key: 'target', label: 'Record' },
              { key: 'summary', label: 'What' },
              { key: 'changes', label: 'Values' },
            ],
            rows: rows.map((r) => ({
              at: displayTimestamp(r.at, tz),
              actor: `${r.actor}${r.actorKind === 'key' ? ' (API key)' : ''}`,
              action: r.action,
              target: targetCell(r, names),
              summary: r.summary,
              changes: changes(r.before, r.after),
            })),
            next,
            first: filter.before === undefined ? undefined : `${pages.base}${Object.keys(kept).length ? `?${new URLSearchParams(kept)}` : ''}`,
          },
        ],
      };
    });
  },
};
