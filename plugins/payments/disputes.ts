/**
 * Disputes: a payment's chargeback at its gateway, recorded once per payment beside the reversal
 * (reversals.ts) that takes its credits back. Opening one blocks the buyer (blocks.ts); winning it
 * lifts that block; each step is an event and an audit entry acted by the gateway. Every step runs
 * inside the webhook's transaction, after the payment row is locked, so racing copies meet there.
 */
import { addSeconds, now } from '../../core/format.ts';
import { countParam } from '../../core/db.ts';
import { count, fields, raw, sql, sum, where } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { Blocks } from './blocks.ts';
import type { DisputeFacts } from './contract.ts';
import { PaymentsDispute, PaymentsPayment } from './entities.ts';
import type { Payment, PaymentsDeps } from './model.ts';

const D = PaymentsDispute.c;

export type Dispute = TableRecord<typeof PaymentsDispute>;

export class Disputes {
  readonly #deps: PaymentsDeps;
  readonly #blocks: Blocks;

  constructor(deps: PaymentsDeps, blocks: Blocks) {
    this.#deps = deps;
    this.#blocks = blocks;
  }

  /** Writes what the gateway did in the audit log, as the gateway. */
  #audit(gateway: string, action: string, paymentId: string | number, summary: string, after: unknown): Promise<void> {
    const { audit } = this.#deps;
    return audit.as({ kind: 'gateway', name: gateway }, () => audit.record({ action, target: { type: action.split('.')[1]!, id: paymentId }, summary, after }));
  }

  async #find(paymentId: string): Promise<Dispute | undefined> {
    const [dispute] = await PaymentsDispute.select(this.#deps.db, sql`where ${D.paymentId} = ${paymentId}${raw(this.#deps.db.forUpdate)}`);
    return dispute;
  }

  /**
   * A dispute opened: recorded, announced and its buyer blocked, once. PayPal may report one
   * dispute twice (the money's reversal, then the dispute itself): the second fills in its id.
   */
  async opened(payment: Payment, facts: DisputeFacts = {}): Promise<boolean> {
    const { db, events } = this.#deps;
    const stamp = now();
    const dispute: Dispute = {
      paymentId: payment.id,
      gateway: payment.gateway,
      disputeRef: facts.ref ?? null,
      reason: (facts.reason ?? 'unknown').slice(0, 64),
      status: 'open',
      amount: facts.amount ?? payment.amount,
      currency: facts.currency ?? payment.currency,
      evidenceDate: null,
      creationDate: stamp,
      updateDate: stamp,
    };
    const known = await this.#find(payment.id);
    if (known?.status === 'open') {
      if (facts.ref && !known.disputeRef) {
        await db.run(sql`update ${PaymentsDispute} set ${D.disputeRef} = ${facts.ref}, ${D.reason} = ${dispute.reason}, ${D.updateDate} = ${stamp}
          where ${D.paymentId} = ${payment.id}`);
      }
      return false;
    }
    if (known) {
      await db.run(sql`update ${PaymentsDispute} set ${D.disputeRef} = ${dispute.disputeRef}, ${D.reason} = ${dispute.reason}, ${D.status} = 'open',
        ${D.amount} = ${dispute.amount}, ${D.currency} = ${dispute.currency}, ${D.evidenceDate} = null, ${D.updateDate} = ${stamp} where ${D.paymentId} = ${payment.id}`);
    } else {
      await PaymentsDispute.insert(db, dispute);
    }
    await events.emit('payments.dispute.opened', {
      paymentId: payment.id,
      userId: payment.userId,
      guestName: payment.guestName,
      gateway: payment.gateway,
      disputeRef: dispute.disputeRef,
      reason: dispute.reason,
      amount: dispute.amount,
      currency: dispute.currency,
    });
    await this.#audit(payment.gateway, 'payments.dispute.opened', payment.id, `Payment ${payment.id} disputed (${dispute.reason})`, dispute);
    const block = await this.#blocks.place(payment, `Payment ${payment.id} disputed at ${payment.gateway} (${dispute.reason})`);
    if (block) await this.#audit(payment.gateway, 'payments.block.added', block.id, `Purchases blocked for ${block.nameKey}`, block);
    return true;
  }

  /** A dispute's resolution, acted on once: false when it was closed already. Won lifts the block it placed. */
  async closed(payment: Payment, outcome: 'won' | 'lost', facts: DisputeFacts = {}): Promise<boolean> {
    const { db, events } = this.#deps;
    const known = await this.#find(payment.id);
    if (known && known.status !== 'open') return false;
    const stamp = now();
    if (known) {
      await db.run(sql`update ${PaymentsDispute} set ${D.status} = ${outcome}, ${D.updateDate} = ${stamp} where ${D.paymentId} = ${payment.id}`);
    } else {
      // Opened before disputes were recorded: kept closed for the figures.
      await PaymentsDispute.insert(db, {
        paymentId: payment.id,
        gateway: payment.gateway,
        disputeRef: facts.ref ?? null,
        reason: (facts.reason ?? 'unknown').slice(0, 64),
        status: outcome,
        amount: facts.amount ?? payment.amount,
        currency: facts.currency ?? payment.currency,
        evidenceDate: null,
        creationDate: stamp,
        updateDate: stamp,
      });
    }
    const disputeRef = known?.disputeRef ?? facts.ref ?? null;
    await events.emit('payments.dispute.closed', { paymentId: payment.id, userId: payment.userId, gateway: payment.gateway, disputeRef, outcome });
    await this.#audit(payment.gateway, 'payments.dispute.closed', payment.id, `Dispute of payment ${payment.id} ${outcome}`, { outcome });
    const block = outcome === 'won' ? await this.#blocks.ofPayment(payment.id) : undefined;
    if (block && (await this.#blocks.lift(block.id, 'dispute won')).lifted) {
      await this.#audit(payment.gateway, 'payments.block.lifted', block.id, `Block of ${block.nameKey} lifted: dispute won`, { liftedBy: 'dispute won' });
    }
    return true;
  }

  /**
   * The dashboard's figures: disputes by status, and the dispute rate, disputes per payment that
   * moved money (the measure card networks hold merchants to), over the last `days`.
   */
  async figures(days: number): Promise<{ open: number; won: number; lost: number; rate: number }> {
    const { db } = this.#deps;
    const since = addSeconds(now(), -days * 86_400);
    const P = PaymentsPayment.c;
    const [counts] = await db.query(
      sql`select ${fields({
        open: sum(sql`case when ${D.status} = 'open' then 1 else 0 end`),
        won: sum(sql`case when ${D.status} = 'won' then 1 else 0 end`),
        lost: sum(sql`case when ${D.status} = 'lost' then 1 else 0 end`),
      })} from ${PaymentsDispute} where ${D.creationDate} >= ${since}`,
    );
    const [paid] = await db.query(sql`select ${fields({ n: count() })} from ${PaymentsPayment}
      where ${P.creationDate} >= ${since} and ${P.status} in ${['completed', 'credited', 'refunded', 'disputed']}`);
    const [open, won, lost] = [Number(counts?.open ?? 0), Number(counts?.won ?? 0), Number(counts?.lost ?? 0)];
    const payments = Number(paid?.n ?? 0);
    return { open, won, lost, rate: payments === 0 ? 0 : (open + won + lost) / payments };
  }

  /** Newest first, of one status or all. */
  async list(options: { status?: Dispute['status']; limit: number }): Promise<Dispute[]> {
    return PaymentsDispute.select(
      this.#deps.db,
      sql`${where(options.status && sql`${D.status} = ${options.status}`)} order by ${D.creationDate} desc, ${D.paymentId} limit ${countParam(options.limit)}`,
    );
  }

  async find(paymentId: string): Promise<Dispute | undefined> {
    const [dispute] = await PaymentsDispute.select(this.#deps.db, sql`where ${D.paymentId} = ${paymentId}`);
    return dispute;
  }
}
