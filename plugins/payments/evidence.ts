/**
 * A disputed payment's evidence: what the store holds that shows the buyer got what they paid for
 * (each command handed to a game server and acknowledged, the account's sign-ins and addresses),
 * gathered on demand, and sent to the gateway on staff's click exactly once: a conditional update
 * stamps the dispute before the gateway is called (a second click finds it stamped), and is undone
 * when the gateway refuses, so the click can be made again.
 */
import { DomainError } from '../../core/errors.ts';
import { formatMoney, now } from '../../core/format.ts';
import { sql } from '../../core/sql.ts';
import { authRef } from '../auth/contract.ts';
import { deliveryRef } from '../delivery/contract.ts';
import type { DisputeEvidence } from './contract.ts';
import type { Dispute, Disputes } from './disputes.ts';
import { PaymentsDispute, PaymentsPayment } from './entities.ts';
import type { Gateways } from './gateways.ts';
import { pricedBasket, type Payment, type PaymentsDeps } from './model.ts';

const D = PaymentsDispute.c;
/** The most sign-ins and commands listed: a gateway's text fields are limited (Stripe: 20,000 characters). */
const MOST = 50;

export interface GatheredEvidence {
  dispute: Dispute;
  /** The gateway takes evidence through its API (Stripe); otherwise staff send it themselves (PayPal's resolution centre). */
  submittable: boolean;
  evidence: DisputeEvidence;
}

export class Evidence {
  readonly #deps: PaymentsDeps;
  readonly #disputes: Disputes;
  readonly #gateways: Gateways;

  constructor(deps: PaymentsDeps, disputes: Disputes, gateways: Gateways) {
    this.#deps = deps;
    this.#disputes = disputes;
    this.#gateways = gateways;
  }

  async #dispute(paymentId: string): Promise<{ dispute: Dispute; payment: Payment }> {
    const dispute = await this.#disputes.find(paymentId);
    const payment = dispute && (await PaymentsPayment.find(this.#deps.db, paymentId));
    if (!dispute || !payment) throw new DomainError('DISPUTE_NOT_FOUND', `Payment ${paymentId} has no dispute.`);
    return { dispute, payment };
  }

  /** What the store holds for the disputed payment, ready to send. DISPUTE_NOT_FOUND when the payment has no dispute. */
  async gather(paymentId: string): Promise<GatheredEvidence> {
    const { dispute, payment } = await this.#dispute(paymentId);
    const user = payment.userId === 0 ? undefined : await this.#deps.users.findById(payment.userId);
    const delivery = this.#deps.services.find(deliveryRef);
    const auth = this.#deps.services.find(authRef);
    const commands =
      delivery && payment.orderId !== null
        ? await delivery.listQueue({ orderId: payment.orderId, userId: payment.userId || undefined, page: 1, perPage: MOST })
        : [];
    const signIns = auth && user ? await auth.signIns(user.id, MOST) : [];
    const bought =
      payment.purchaseLines === null
        ? `${formatMoney(payment.credits)} store credits`
        : pricedBasket(payment.purchaseLines)
            .lines.map((l) => `${l.quantity} × ${l.productName}`)
            .join(', ');
    // The chargeback's own commands (a ban) and a refund's are not evidence of delivery.
    const delivered = commands
      .filter((c) => c.trigger === 'purchase' || c.trigger === 'renewal')
      .map(
        (c) =>
          `${c.creationDate} queued for server ${c.serverID}: ${c.command} (${c.trigger}) — ${c.status}${c.status === 'done' ? `, acknowledged ${c.updatedDate}` : ''}`,
      );
    const activity = [
      user
        ? `Account "${user.username}" created ${user.creationDate} UTC from ${user.creationIP}.`
        : `Guest purchase under the in-game name "${payment.guestName}".`,
      ...signIns.map((s) => `Signed in ${s.createdAt} UTC from ${s.ip}${s.userAgent ? ` (${s.userAgent})` : ''}.`),
      `Paid ${payment.creationDate} UTC: payment ${payment.id}, ${formatMoney(payment.amount)} ${payment.currency} through ${payment.gateway}.`,
    ];
    const evidence: DisputeEvidence = {
      customerName: user?.username ?? payment.guestName ?? '',
      customerEmail: user?.email ?? null,
      productDescription: `Digital goods delivered in a game: ${bought}.`,
      serviceDate: payment.creationDate.slice(0, 10),
      accessActivityLog: activity.join('\n'),
      deliveryLog: delivered.length ? delivered.join('\n') : 'No game command was queued for this order.',
    };
    return { dispute, submittable: Boolean(this.#gateways.find(payment.gateway)?.submitEvidence) && dispute.disputeRef !== null, evidence };
  }

  /**
   * Sends the evidence to the gateway, once. EVIDENCE_ALREADY_SUBMITTED when it was sent (or is
   * being sent), DISPUTE_CLOSED when the dispute is decided, EVIDENCE_NOT_SUPPORTED when the gateway
   * takes none through its API (PayPal: staff send the gathered text in its resolution centre).
   */
  async submit(paymentId: string): Promise<Dispute> {
    const { db, log, audit } = this.#deps;
    const gathered = await this.gather(paymentId);
    const { dispute } = gathered;
    const adapter = this.#gateways.find(dispute.gateway);
    if (!gathered.submittable || !adapter?.submitEvidence || dispute.disputeRef === null) {
      throw new DomainError(
        'EVIDENCE_NOT_SUPPORTED',
        `${dispute.gateway} takes no evidence through its API: send the gathered evidence in its dispute centre.`,
      );
    }
    if (dispute.status !== 'open')
      throw new DomainError('DISPUTE_CLOSED', `The dispute of payment ${paymentId} is ${dispute.status}: it takes no more evidence.`);
    const stamp = now();
    const { affectedRows } = await db.run(sql`update ${PaymentsDispute} set ${D.evidenceDate} = ${stamp}, ${D.updateDate} = ${stamp}
      where ${D.paymentId} = ${paymentId} and ${D.evidenceDate} is null and ${D.status} = 'open'`);
    if (affectedRows === 0) throw new DomainError('EVIDENCE_ALREADY_SUBMITTED', `The evidence for payment ${paymentId} was sent already.`);
    try {
      await adapter.submitEvidence({ paymentId, disputeRef: dispute.disputeRef, evidence: gathered.evidence });
    } catch (err) {
      await db.run(sql`update ${PaymentsDispute} set ${D.evidenceDate} = null where ${D.paymentId} = ${paymentId} and ${D.evidenceDate} = ${stamp}`);
      log.error({ err, paymentId, gateway: dispute.gateway }, 'the gateway refused the dispute evidence');
      throw new DomainError('GATEWAY_ERROR', `The gateway ${dispute.gateway} did not take the evidence; try again later.`);
    }
    await audit.record({ action: 'payments.dispute.evidence', target: { type: 'dispute', id: paymentId }, summary: `Evidence sent for payment ${paymentId}` });
    return { ...dispute, evidenceDate: stamp, updateDate: stamp };
  }
}
