/**
 * What the audit walks (test/audit-routes.test.ts, test/audit-console.test.ts) seed directly for a
 * step no route makes: a failed webhook delivery to redeliver, a block to lift.
 */
import type { FastifyInstance } from 'fastify';
import { now } from '../core/format.ts';
import { NotificationsDelivery, NotificationsEvent } from '../plugins/notifications/entities.ts';
import { PaymentsBlock } from '../plugins/payments/entities.ts';

/** A delivery to `endpointId` that failed its tries; its id. */
export async function failedDelivery(app: FastifyInstance, endpointId: string): Promise<string> {
  const at = now();
  const eventId = await NotificationsEvent.insert(app.db, {
    messageId: 'msg_audit',
    name: 'store.order.completed',
    payload: '{}',
    createdDate: at,
    fanned: true,
  });
  return String(
    await NotificationsDelivery.insert(app.db, {
      eventId,
      endpointId: Number(endpointId),
      status: 'failed',
      attempts: 3,
      nextAttemptDate: at,
      leaseUntil: null,
      claim: null,
      lastStatus: 500,
      updatedDate: at,
    }),
  );
}

/** A block on Steve (`userId`) to lift; its id. */
export async function steveBlocked(app: FastifyInstance, userId: string): Promise<string> {
  return String(
    await PaymentsBlock.insert(app.db, {
      userId: Number(userId),
      nameKey: 'steve',
      emailKey: null,
      ip: null,
      paymentId: null,
      reason: 'a test',
      creationDate: now(),
      liftedDate: null,
    }),
  );
}
