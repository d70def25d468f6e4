/** Admin API of disputes and the block list: the disputes by status, the blocks, and lifting one. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { Block } from './blocks.ts';
import type { Dispute } from './disputes.ts';
import type { DbPaymentsService } from './service.ts';

const tags = ['payments'];

export const DisputeRow = S.row(
  {
    paymentID: S.str(undefined, '9f86d081884c7d659a2feaa0c55ad015'),
    gateway: S.str(undefined, 'stripe'),
    disputeRef: S.strOrNull("the gateway's id of the dispute", 'dp_1Q2w3E'),
    reason: S.str("the gateway's reason code", 'fraudulent'),
    status: Type.Union([Type.Literal('open'), Type.Literal('won'), Type.Literal('lost')]),
    amount: S.moneyStr(),
    currency: S.str(undefined, 'EUR'),
    evidenceDate: Type.Union([S.dateStr('when evidence went to the gateway'), Type.Null()]),
    creationDate: S.dateStr(),
    updateDate: S.dateStr(),
  },
  'PaymentsDispute',
);

export const BlockRow = S.row(
  {
    id: S.idStr(),
    userID: S.str('0 for a guest', '42'),
    name: S.str('the username or in-game name, lower-cased', 'steve'),
    email: S.strOrNull('lower-cased', 'steve@example.com'),
    ip: S.strOrNull('only when blocks name addresses (blockAddresses)', '203.0.113.7'),
    paymentID: S.strOrNull('the disputed payment that placed it', '9f86d081884c7d659a2feaa0c55ad015'),
    reason: S.str(undefined, 'dispute: fraudulent'),
    creationDate: S.dateStr(),
    liftedDate: Type.Union([S.dateStr(), Type.Null()]),
    liftedBy: S.strOrNull('who lifted it, or "dispute won"', 'alice'),
  },
  'PaymentsBlock',
);

export function showDispute(d: Dispute, tz: string) {
  return {
    paymentID: d.paymentId,
    gateway: d.gateway,
    disputeRef: d.disputeRef,
    reason: d.reason,
    status: d.status,
    amount: formatMoney(d.amount),
    currency: d.currency,
    evidenceDate: d.evidenceDate === null ? null : displayTimestamp(d.evidenceDate, tz),
    creationDate: displayTimestamp(d.creationDate, tz),
    updateDate: displayTimestamp(d.updateDate, tz),
  };
}

export function showBlock(b: Block, tz: string) {
  return {
    id: String(b.id),
    userID: String(b.userId),
    name: b.nameKey,
    email: b.emailKey,
    ip: b.ip,
    paymentID: b.paymentId,
    reason: b.reason,
    creationDate: displayTimestamp(b.creationDate, tz),
    liftedDate: b.liftedDate === null ? null : displayTimestamp(b.liftedDate, tz),
    liftedBy: b.liftedBy,
  };
}

const Limit = Type.Integer({ minimum: 1, maximum: 500, default: 100 });

const DisputeParams = Type.Object({ paymentID: Type.String({ pattern: '^[0-9a-f]{32}$' }) });

export const EvidenceResponse = Type.Object({
  dispute: DisputeRow,
  submittable: Type.Boolean({ description: 'the gateway takes evidence through its API (Stripe); otherwise send the text in its dispute centre (PayPal)' }),
  evidence: Type.Object({
    customerName: S.str(undefined, 'Steve'),
    customerEmail: S.strOrNull(undefined, 'steve@example.com'),
    productDescription: S.str(undefined, '1 × VIP'),
    serviceDate: S.str('YYYY-MM-DD', '2026-11-28'),
    accessActivityLog: S.str("the account's creation, its sign-ins with their addresses, the payment", '2026-11-01 10:00:00 signed in from 203.0.113.7'),
    deliveryLog: S.str(
      'each game command: when it was queued for its server and when the server acknowledged it',
      '2026-11-01 10:00:05 queued on Survival: lp user Steve parent add vip',
    ),
  }),
});

export function disputeRoutes(fastify: FastifyInstance, payments: DbPaymentsService, tz: () => string): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  app.get(
    '/api/admin/payments/disputes',
    {
      schema: {
        tags,
        summary: 'Disputes (chargebacks), newest first',
        querystring: Type.Object({ status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('won'), Type.Literal('lost')])), limit: Limit }),
        response: { 200: Type.Array(DisputeRow) },
      },
    },
    async (request) => (await payments.disputes.list(request.query)).map((d) => showDispute(d, tz())),
  );
  app.get(
    '/api/admin/payments/disputes/:paymentID/evidence',
    {
      schema: {
        tags,
        summary: "A disputed payment's evidence, gathered from what the store holds",
        params: DisputeParams,
        response: { 200: EvidenceResponse },
        errors: ['DISPUTE_NOT_FOUND'],
      },
    },
    async (request) => {
      const { dispute, submittable, evidence } = await payments.evidence.gather(request.params.paymentID);
      return { dispute: showDispute(dispute, tz()), submittable, evidence };
    },
  );
  app.post(
    '/api/admin/payments/disputes/:paymentID/evidence',
    {
      config: { idempotent: 'own-commit' },
      schema: {
        tags,
        summary: "Send a disputed payment's evidence to its gateway, once",
        description: 'Stripe only: the evidence is submitted for review at once. A second call answers EVIDENCE_ALREADY_SUBMITTED.',
        params: DisputeParams,
        response: { 200: DisputeRow },
        errors: ['DISPUTE_NOT_FOUND', 'DISPUTE_CLOSED', 'EVIDENCE_ALREADY_SUBMITTED', 'EVIDENCE_NOT_SUPPORTED', 'GATEWAY_ERROR'],
      },
    },
    async (request) => showDispute(await payments.evidence.submit(request.params.paymentID), tz()),
  );
  app.get(
    '/api/admin/payments/blocks',
    {
      schema: {
        tags,
        summary: 'Players blocked from paying at a gateway after a dispute, newest first',
        description: 'Standing blocks; `all=true` lists lifted ones too.',
        querystring: Type.Object({ all: Type.Optional(S.boolish()), limit: Limit }),
        response: { 200: Type.Array(BlockRow) },
      },
    },
    async (request) => (await payments.blocks.list({ all: S.toBool(request.query.all), limit: request.query.limit })).map((b) => showBlock(b, tz())),
  );
  app.post(
    '/api/admin/payments/blocks/:id/lift',
    {
      schema: {
        tags,
        summary: 'Lift a block: the player may pay at a gateway again',
        description: 'The block is kept, stamped with who lifted it; lifting it again changes nothing.',
        params: S.idParam(),
        response: { 200: BlockRow },
        errors: ['BLOCK_NOT_FOUND'],
      },
    },
    async (request) => showBlock(await payments.blocks.liftByStaff(Number(request.params.id)), tz()),
  );
}
