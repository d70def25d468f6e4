/**
 * Real money through the payments feature (an optional peer): the page that sends the player on
 * to a gateway, a top-up of the balance, and a payment followed until its order is delivered. The
 * payments feature prices a basket from the catalogue and completes it on the gateway's verified
 * webhook; the storefront only starts it and shows where it stands.
 */
import { DomainError } from '../../core/errors.ts';
import type { DeliveryService } from '../delivery/contract.ts';
import type { PaymentsService, PurchaseStatus, TaxFacts } from '../payments/contract.ts';
import { deliveryRows, LIVE, stateOf } from './orders.ts';
import type { MessageKey } from './messages.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './router.ts';
import type { Site, Visit } from './site.ts';

/** The payments a browser started (a guest has no account to find them by), newest first. */
const PAYMENTS_COOKIE = 'storefront_payments';
const KEPT = 10;
const NAMES: Record<string, string> = { stripe: 'Stripe', paypal: 'PayPal', test: 'Test payment (test mode)' };

export const gatewayName = (id: string): string => NAMES[id] ?? id;

/** A refusal the page shows: a client's mistake, or the gateway failing (try again later). */
export function payRefused(err: unknown): err is DomainError {
  return refused(err) || (err instanceof DomainError && err.code === 'GATEWAY_ERROR');
}

/** The tax line of a purchase being paid: the country, and the tax included in the price or added to it with the total to pay. */
function taxLine(visit: Visit, tax: TaxFacts, amount: number) {
  const money = visit.money(tax.amount);
  return {
    label: visit.t('order.tax', { country: tax.country ?? '' }).trim(),
    text: tax.inclusive ? visit.t('order.taxIncluded', { tax: money }) : visit.t('pay.taxAdded', { tax: money, total: visit.money(amount + tax.amount) }),
  };
}

/** The buyer's country for the owner's tax rates, as the basket's form sends it, and the request's headers (the proxy's country). */
export const billingOf = (visit: Visit, form: Record<string, string>) => ({
  billingCountry: form.billingCountry?.trim().slice(0, 8) || undefined,
  billingRegion: form.billingRegion?.trim().slice(0, 8) || undefined,
  headers: visit.request.headers,
});

export class Payments {
  readonly #site: Site;

  constructor(site: Site) {
    this.#site = site;
  }

  mine(visit: Visit): string[] {
    return (visit.request.cookies[PAYMENTS_COOKIE] ?? '').split('.').filter((id) => /^[0-9a-f]{32}$/.test(id));
  }

  /** Where the gateway sends the player back, and where cancelling goes. */
  urls(visit: Visit, back: string): { returnURL: string; cancelURL: string } {
    return { returnURL: this.#site.canonical(visit.request, '/payment/return'), cancelURL: this.#site.canonical(visit.request, back) };
  }

  /**
   * The page that sends the browser on to the gateway (a meta refresh and a link): a redirect
   * answering a form post may not leave the site under the page's CSP (form-action 'self').
   */
  onward(visit: Visit, started: { paymentId: string; checkoutURL: string; amount?: number; tax?: TaxFacts }, gateway: string) {
    this.#site.setCookie(
      visit.request,
      visit.reply,
      PAYMENTS_COOKIE,
      [started.paymentId, ...this.mine(visit).filter((id) => id !== started.paymentId)].slice(0, KEPT).join('.'),
      30 * 86400,
    );
    const name = gatewayName(gateway);
    const { tax, amount = 0 } = started;
    // With the owner's tax the buyer sees it and goes on by the button, so no refresh carries them past it.
    const on = tax ? { payURL: started.checkoutURL, tax: taxLine(visit, tax, amount) } : { checkoutURL: started.checkoutURL };
    return this.#site.page(visit, 'pay', { title: visit.t('pay.title', { gateway: name }) }, { ...on, gateway: name });
  }
}

export function paymentRoutes(
  pages: PageRouter,
  site: Site,
  pay: Payments,
  peers: { payments: () => PaymentsService | undefined; delivery: () => DeliveryService | undefined },
  opts: { pollSeconds: number; checkoutLimit: RateLimit },
): void {
  const notFound = (visit: Visit) => site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));

  pages.get(
    '/account/top-up',
    async (visit) => {
      const payments = peers.payments();
      if (!payments) return notFound(visit);
      const packages = await payments.topUpPackages();
      return site.page(
        visit,
        'topup',
        { title: visit.t('topup.title') },
        {
          packages: packages.map((p) => ({ id: p.id, name: p.name, price: visit.money(p.price), credits: visit.money(p.credits) })),
          gateways: payments.availableGateways().map((g) => ({ id: g, name: gatewayName(g) })),
        },
      );
    },
    { signedIn: true },
  );

  pages.post(
    '/account/top-up',
    async (visit, form) => {
      const payments = peers.payments();
      const gateway = form.gateway ?? '';
      const packageId = /^[0-9]{1,15}$/.test(form.package ?? '') ? Number(form.package) : 0;
      if (!payments?.availableGateways().includes(gateway) || !packageId) return site.redirect(visit, site.u('/account/top-up'));
      try {
        const started = await payments.startTopUp({ gateway, userId: visit.player!.user.id, packageId, ...pay.urls(visit, '/account/top-up') });
        return pay.onward(visit, started, gateway);
      } catch (err) {
        if (!payRefused(err)) throw err;
        return site.message(visit, err.code === 'GATEWAY_ERROR' ? 502 : 422, visit.t('error.title'), refusal(visit, err));
      }
    },
    { signedIn: true, limit: { name: 'checkout', rate: opts.checkoutLimit } },
  );

  // The gateway sends the player back here: to the payment this browser started last.
  pages.get('/payment/return', async (visit) => {
    const [last] = pay.mine(visit);
    return site.redirect(visit, last ? site.u(`/payment/${last}`) : site.u('/'));
  });

  pages.get('/payment/:id', async (visit) => {
    const payments = peers.payments();
    const id = (visit.request.params as { id: string }).id;
    const status: PurchaseStatus | undefined =
      payments && /^[0-9a-f]{32}$/.test(id)
        ? await payments.purchaseStatus(id).catch((err: unknown) => {
            if (refused(err)) return undefined;
            throw err;
          })
        : undefined;
    // Shown to the browser that started it and to the buyer's account, to nobody else.
    if (!status || !(pay.mine(visit).includes(id) || (visit.player !== undefined && status.userId === visit.player.user.id))) return notFound(visit);
    let text = visit.t(`payment.status.${status.status}` as MessageKey, { amount: visit.money(status.amount) });
    let live = status.status === 'pending';
    let state: string = status.status;
    if (status.status === 'completed' && status.kind === 'purchase' && status.orderId !== null) {
      const { rows, names } = await deliveryRows(peers.delivery(), status.orderId);
      const delivery = stateOf({ id: String(status.orderId), status: 'completed' }, rows, names);
      text = visit.t(`order.status.${delivery.state}` as MessageKey, { servers: delivery.servers });
      live = LIVE.includes(delivery.state);
      state = delivery.state;
    }
    return site.page(
      visit,
      'payment',
      { title: visit.t('payment.title') },
      {
        payment: {
          id,
          amount: visit.money(status.amount),
          text,
          state,
          guestName: status.guestName,
          signedUp: status.userId !== null && status.userId > 0,
          test: status.test,
        },
        live,
        pollSeconds: opts.pollSeconds,
      },
    );
  });
}
