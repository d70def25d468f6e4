/** The audit log's admin API: its rows dated in the site's time zone (a site setting). */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { auditFilter, AuditQuery, type AuditLog } from './audit.ts';
import { displayTimestamp } from './format.ts';
import { dateStr, idStr, str, strOrNull } from './schemas.ts';
import type { SettingsService } from './settings.ts';

const AuditEntryRow = Type.Object({
  id: Type.Integer({ examples: [42] }),
  at: dateStr(),
  actorKind: str('staff (console), key (API key) or cli (command line)', 'staff'),
  actor: str("the username or the key's name", 'Alice'),
  action: str('feature.record.verb', 'store.order.refund'),
  targetType: str('what kind of record', 'order'),
  targetID: idStr(),
  summary: str('one line for people', 'Refunded order 42 of Steve (4.99)'),
  before: Type.Unknown({ description: 'the record before the change, when kept', examples: [{ status: 'completed' }] }),
  after: Type.Unknown({ description: 'the record after the change, when kept', examples: [{ status: 'refunded' }] }),
  requestID: strOrNull('the request that made the change (its X-Request-Id)', '2b1f0c4e-8d52-4f0e-9a57-3c0e6f1d2a9b'),
});

export async function auditRoutes(app: FastifyInstance, audit: AuditLog, settings: SettingsService): Promise<void> {
  app.get(
    '/api/admin/audit',
    {
      schema: {
        tags: ['admin'],
        summary: 'The audit log: what staff changed, newest first, filtered and paged with `before`',
        querystring: AuditQuery,
        response: { 200: Type.Array(AuditEntryRow) },
      },
    },
    async (request) =>
      (await audit.list(auditFilter(request.query as Static<typeof AuditQuery>, 200))).map((r) => ({
        id: r.id,
        at: displayTimestamp(r.at, settings.get().timezone),
        actorKind: r.actorKind,
        actor: r.actor,
        action: r.action,
        targetType: r.targetType,
        targetID: r.targetId,
        summary: r.summary,
        requestID: r.requestId,
        before: r.before === null ? null : JSON.parse(r.before),
        after: r.after === null ? null : JSON.parse(r.after),
      })),
  );
}
