/** A product sold as a subscription: what its page says (it renews, at what price, how often) and its Subscribe button. */
import { parseMoney } from '../../core/format.ts';
import type { PlanRow, SubscriptionRow, SubscriptionsService } from '../subscriptions/contract.ts';
import type { MessageKey } from './messages.ts';
import { gatewayName, payRefused } from './payments.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './router.ts';
import type { Site, Visit } from './site.ts';

export interface SubscriptionOffer {
  renews: string;
  trial?: string;
  /** The gateways it can be paid at besides the balance (Stripe, PayPal), when the payments feature has them on. */
  gateways?: { id: string; name: string }[];
}

/** The plan in the visitor's language: "Renews every month at 4.99 USD", and the trial. */
export function offerOf(visit: Visit, plan: PlanRow | undefined): SubscriptionOffer | undefined {
  if (!plan) return undefined;
  const count = Number(plan.intervalCount);
  const key = `product.renews.${count === 1 ? 'one' : 'many'}.${plan.intervalUnit}` as MessageKey;
  const trialDays = Number(plan.trialDays);
  return {
    renews: visit.t(key, { count, price: visit.money(parseMoney(plan.price) ?? 0) }),
    ...(trialDays > 0 ? { trial: visit.t('product.trial', { days: trialDays }) } : {}),
  };
}

/** The plan of the product a page shows, when the subscriptions feature runs and sells it, and the gateways it can be paid at. */
export async function offerFor(visit: Visit, subscriptions: (() => SubscriptionsService | undefined) | undefined, productId: number) {
  const subs = subscriptions?.();
  const offer = offerOf(visit, await subs?.planOfProduct(productId));
  if (!offer || !subs) return offer;
  return { ...offer, gateways: subs.checkoutGateways().map((id) => ({ id, name: gatewayName(id) })) };
}

/** What each basket line's product renews at, by product, for those sold as a subscription too (the basket and its checkout say so). */
export async function basketOffers(visit: Visit, subscriptions: (() => SubscriptionsService | undefined) | undefined, lines: { productId: number }[]) {
  const subs = subscriptions?.();
  const plans = subs
    ? await Promise.all([...new Set(lines.map((l) => l.productId))].map(async (id) => [id, offerOf(visit, await subs.planOfProduct(id))] as const))
    : [];
  return new Map(plans.filter(([, offer]) => offer).map(([id, offer]) => [id, offer!.renews]));
}

/** A subscription as the account page lists it: what it is, its state, the next payment and its amount, whether it can be cancelled. */
export interface AccountSubscription {
  id: string;
  name: string;
  state: string;
  next: string;
  amount: string;
  cancellable: boolean;
  /** The other tiers of its plan's group it can change to (a running wallet subscription). */
  tiers: { id: string; name: string; price: string }[];
}

function stateOf(visit: Visit, s: SubscriptionRow, plans: PlanRow[]): string {
  if (s.status === 'ended') return visit.t('subscription.ended');
  if (s.status === 'past_due') return visit.t('subscription.pastDue', { date: s.graceUntil ?? '' });
  if (s.cancelAtPeriodEnd === '1') return visit.t('subscription.ending', { date: s.periodEnd });
  const next = s.nextPlanID === null ? undefined : plans.find((p) => p.id === s.nextPlanID);
  return next ? visit.t('subscription.changes', { name: next.productName, date: s.periodEnd }) : visit.t('subscription.active');
}

/** The plans a running wallet subscription can change to: the same group and interval, on sale. */
function tiersOf(visit: Visit, s: SubscriptionRow, plans: PlanRow[]) {
  const own = plans.find((p) => p.productID === s.productID);
  if (!own?.group || s.gateway !== 'credits' || s.status === 'ended' || s.cancelAtPeriodEnd === '1') return [];
  return plans
    .filter(
      (p) => p.group === own.group && p.id !== own.id && p.isActive === '1' && p.intervalUnit === own.intervalUnit && p.intervalCount === own.intervalCount,
    )
    .map((p) => ({ id: p.id, name: p.productName, price: visit.money(parseMoney(p.price) ?? 0) }));
}

/** The player's subscriptions for the account page, newest first; none without the subscriptions feature. */
export async function accountSubscriptions(visit: Visit, subscriptions: SubscriptionsService | undefined, userId: number): Promise<AccountSubscription[]> {
  const rows = subscriptions ? await subscriptions.list({ userId }) : [];
  const plans = rows.length > 0 ? await subscriptions!.listPlans() : [];
  return rows.map((s) => ({
    id: s.id,
    name: s.productName,
    state: stateOf(visit, s, plans),
    tiers: tiersOf(visit, s, plans),
    next: s.nextPaymentDate ?? '',
    amount: s.nextAmount === null ? '' : visit.money(parseMoney(s.nextAmount) ?? 0),
    cancellable: s.status !== 'ended' && s.cancelAtPeriodEnd === '0',
  }));
}

/** The first period paid at a gateway: the page that sends the browser on to its checkout (a form post may not redirect off the site). */
async function atGateway(site: Site, visit: Visit, subs: SubscriptionsService, productId: number, gateway: 'stripe' | 'paypal') {
  const back = site.u(`/product/${productId}`);
  try {
    const { checkoutURL } = await subs.checkout({
      userId: visit.player!.user.id,
      productId,
      gateway,
      returnURL: site.canonical(visit.request, '/account'),
      cancelURL: site.canonical(visit.request, back),
    });
    const name = gatewayName(gateway);
    return site.page(visit, 'pay', { title: visit.t('pay.title', { gateway: name }) }, { checkoutURL, gateway: name });
  } catch (err) {
    if (!payRefused(err)) throw err;
    return site.redirect(visit, back, refusal(visit, err));
  }
}

/**
 * POST /subscribe: a signed-in player subscribes, paying from the balance (back to the product's
 * page with what happened) or, with `gateway` one of those on, at Stripe or PayPal.
 */
export function subscribeRoutes(pages: PageRouter, site: Site, subscriptions: () => SubscriptionsService | undefined, checkoutLimit: RateLimit): void {
  pages.post(
    '/subscribe',
    async (visit, form) => {
      const productId = /^[0-9]{1,15}$/.test(form.product ?? '') ? Number(form.product) : 0;
      const subs = subscriptions();
      if (!subs || productId === 0) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
      const back = site.u(`/product/${productId}`);
      const gateway = subs.checkoutGateways().find((g) => g === form.gateway);
      if (gateway) return atGateway(site, visit, subs, productId, gateway);
      if (form.gateway && form.gateway !== 'credits') return site.redirect(visit, back, visit.t('error.GATEWAY_UNAVAILABLE'));
      try {
        const sub = await subs.subscribe(visit.player!.user.id, productId);
        return site.redirect(visit, back, visit.t('subscription.started', { name: sub.productName, date: sub.nextPaymentDate ?? sub.periodEnd }));
      } catch (err) {
        if (!refused(err)) throw err;
        return site.redirect(visit, back, refusal(visit, err));
      }
    },
    { signedIn: true, limit: { name: 'checkout', rate: checkoutLimit } },
  );

  // The player's change of tier, from the account page: it takes effect at the next period.
  pages.post(
    '/account/subscriptions/:id/change',
    async (visit, form) => {
      const id = (visit.request.params as { id: string }).id;
      const subs = subscriptions();
      const back = site.u('/account');
      if (!subs || !/^[0-9]{1,15}$/.test(id)) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
      const planId = /^[0-9]{1,15}$/.test(form.plan ?? '') ? Number(form.plan) : 0;
      try {
        const sub = await subs.changePlan(Number(id), { userId: visit.player!.user.id }, planId);
        const plan = await subs.getPlan(planId);
        const price = visit.money(parseMoney(sub.nextAmount ?? plan.price) ?? 0);
        return site.redirect(visit, back, visit.t('subscription.changed', { name: plan.productName, date: sub.periodEnd, price }));
      } catch (err) {
        if (!refused(err)) throw err;
        return site.redirect(visit, back, refusal(visit, err));
      }
    },
    { signedIn: true },
  );

  // The player's cancel: at the period's end, from the account page.
  pages.post(
    '/account/subscriptions/:id/cancel',
    async (visit) => {
      const id = (visit.request.params as { id: string }).id;
      const subs = subscriptions();
      const back = site.u('/account');
      if (!subs || !/^[0-9]{1,15}$/.test(id)) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
      try {
        const sub = await subs.cancel(Number(id), { userId: visit.player!.user.id }, 'period_end');
        return site.redirect(visit, back, visit.t('subscription.cancelled', { name: sub.productName, date: sub.periodEnd }));
      } catch (err) {
        if (!refused(err)) throw err;
        return site.redirect(visit, back, refusal(visit, err));
      }
    },
    { signedIn: true },
  );
}
