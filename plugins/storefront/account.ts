/** The player's side: sign-in (two-factor where enrolled), register, sign-out, the account and its orders followed live (tickets: tickets.ts). */
import { DomainError } from '../../core/errors.ts';
import { parseMoney } from '../../core/format.ts';
import { localPath } from '../../core/pages.ts';
import type { AuthService } from '../auth/contract.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { DeliveryService, QueueRow } from '../delivery/contract.ts';
import type { EmailService } from '../email/contract.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { OrderRow, StoreOrders } from '../store/contract.ts';
import type { SubscriptionsService } from '../subscriptions/contract.ts';
import type { SupportService } from '../support/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { MessageKey } from './messages.ts';
import { deliveryRows, LIVE, serverNames, stateOf } from './orders.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './router.ts';
import { SESSION_COOKIE, type Site, type Visit } from './site.ts';
import { ticketRoutes } from './tickets.ts';
import { accountSubscriptions } from './subscribe.ts';

export interface AccountPeers {
  auth: AuthService;
  users: UsersService;
  store: StoreOrders;
  credits: () => CreditsService | undefined;
  delivery: () => DeliveryService | undefined;
  support: () => SupportService | undefined;
  payments: () => PaymentsService | undefined;
  subscriptions?: () => SubscriptionsService | undefined;
  /** Mail that works: SMTP set (the forgotten-password link and email verification). */
  email: () => EmailService | undefined;
}

export interface AccountOptions {
  pollSeconds: number;
  signInLimit: RateLimit;
  registerLimit: RateLimit;
}

/** "Top up" is offered when there is a gateway to pay at and a package to buy. */
async function topUpOffered(payments: PaymentsService | undefined): Promise<boolean> {
  return payments !== undefined && payments.availableGateways().length > 0 && (await payments.topUpPackages()).length > 0;
}

/** Orders listed on the account page, newest first. */
const ORDERS_SHOWN = 50;

/** Only a path of this storefront: a `next` parameter cannot send anyone elsewhere. */
function safeNext(site: Site, next: unknown): string {
  return localPath(next, site.base) ?? site.u('/account');
}

export function accountRoutes(pages: PageRouter, site: Site, peers: AccountPeers, opts: AccountOptions): void {
  signInRoutes(pages, site, peers, opts);
  registerRoutes(pages, site, peers, opts);
  orderRoutes(pages, site, peers, opts);
  ticketRoutes(pages, site, peers.support);
}

/** What a session is opened with: where it came from. */
const clientOf = (visit: Visit) => ({ ip: visit.request.ip, useragent: String(visit.request.headers['user-agent'] ?? '').slice(0, 512) });

/** Sign-in (with the two-factor code where enrolled) and sign-out. */
function signInRoutes(pages: PageRouter, site: Site, peers: AccountPeers, opts: AccountOptions): void {
  const { auth, users } = peers;
  const signInPage = (visit: Visit, values: Record<string, string>, errors: Record<string, string> = {}, status = 200, unverified = false) =>
    site.page(
      visit,
      'signin',
      { title: visit.t('signIn.title'), status, canonical: '/login' },
      {
        values,
        errors,
        next: values.next ?? '',
        mail: peers.email() !== undefined,
        unverified: unverified && peers.email()?.verificationRequired,
      },
    );

  pages.get('/login', async (visit, query) => {
    if (visit.player) return site.redirect(visit, safeNext(site, query.next));
    return signInPage(visit, { next: query.next ?? '' });
  });

  pages.post(
    '/login',
    async (visit, form) => {
      const sent = (visit.request.query as { next?: unknown }).next;
      const next = typeof sent === 'string' ? sent : '';
      const values = { username: (form.username ?? '').trim().slice(0, 64), next };
      const refuse = (errors: Record<string, string>, status: number, unverified = false) => signInPage(visit, values, errors, status, unverified);
      if (!values.username) return refuse({ username: visit.t('error.required') }, 422);
      if (!form.password) return refuse({ password: visit.t('error.required') }, 422);
      try {
        const check = await auth.checkPassword(values.username, form.password);
        if (check.codeRequired) {
          if (!form.code?.trim()) return refuse({ code: visit.t('signIn.codeNeeded') }, 422);
          await auth.checkCode(check.userId, form.code.trim());
        }
        const user = await users.requireById(check.userId);
        if (!user.isVerified) return refuse({ _form: visit.t('signIn.unverified') }, 403, true);
        site.setCookie(visit.request, visit.reply, SESSION_COOKIE, await auth.createSession(check.userId, clientOf(visit)));
        return site.redirect(visit, safeNext(site, next), visit.t('signIn.done', { name: user.username }));
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        if (err.code === 'USER_NOT_FOUND' || err.code === 'WRONG_PASSWORD') return refuse({ _form: visit.t('signIn.wrong') }, 401);
        if (err.code === 'WRONG_CODE') return refuse({ code: visit.t('signIn.codeWrong') }, 401);
        if (err.code === 'RATE_LIMITED') return refuse({ _form: err.message }, 429);
        throw err;
      }
    },
    { limit: { name: 'sign-in', rate: opts.signInLimit } },
  );

  pages.post('/logout', async (visit) => {
    if (visit.player) await auth.endSession(visit.player.token);
    site.setCookie(visit.request, visit.reply, SESSION_COOKIE, '', 0);
    return site.redirect(visit, site.u('/'), visit.t('signOut.done'));
  });
}

/** Which field a refused registration names. */
const REGISTER_FIELD: Record<string, string> = {
  USERNAME_ALREADY_EXIST: 'username',
  INVALID_USERNAME: 'username',
  EMAIL_ALREADY_EXIST: 'email',
  INVALID_EMAIL: 'email',
  INVALID_PASSWORD: 'password',
};

function registerRoutes(pages: PageRouter, site: Site, { auth }: AccountPeers, opts: AccountOptions): void {
  const registerPage = (visit: Visit, values: Record<string, string>, errors: Record<string, string> = {}, status = 200) =>
    site.page(
      visit,
      'register',
      { title: visit.t('register.title'), status, canonical: '/register' },
      {
        values,
        errors,
        emailRequired: site.settings().registrationEmailRequired,
        passwordMin: auth.passwordLength.min,
        passwordMax: auth.passwordLength.max,
      },
    );

  pages.get('/register', async (visit) => (visit.player ? site.redirect(visit, site.u('/account')) : registerPage(visit, {})));

  pages.post(
    '/register',
    async (visit, form) => {
      const values = { username: (form.username ?? '').trim(), email: (form.email ?? '').trim() };
      try {
        const made = await auth.register({ username: values.username, password: form.password ?? '', email: values.email }, clientOf(visit));
        if (made.isEmailVerificationRequired) {
          // Signed in only once the mailed link is opened.
          await auth.endSession(made.token);
          return site.redirect(visit, site.u('/login'), visit.t('register.verify', { name: values.username }));
        }
        site.setCookie(visit.request, visit.reply, SESSION_COOKIE, made.token);
        return site.redirect(visit, site.u('/account'), visit.t('register.done', { name: values.username }));
      } catch (err) {
        if (!refused(err)) throw err;
        const message = err.code === 'VALIDATION_ERROR' ? visit.t('error.required') : refusal(visit, err, auth.passwordLength);
        return registerPage(visit, values, { [REGISTER_FIELD[err.code] ?? (err.code === 'VALIDATION_ERROR' ? 'email' : '_form')]: message }, 422);
      }
    },
    { limit: { name: 'register', rate: opts.registerLimit } },
  );
}

function orderView(visit: Visit, order: OrderRow, rows: QueueRow[], names: Map<string, string>) {
  const { state, servers } = stateOf(order, rows, names);
  return {
    id: order.id,
    state,
    status: visit.t(`order.status.${state}` as MessageKey, { servers }),
    total: visit.money(parseMoney(order.total) ?? 0),
    date: order.creationDate.slice(0, 16),
    test: order.test,
  };
}

/** The tax line of an order that carries tax (and the seller's tax number); none otherwise. */
async function taxView(visit: Visit, payments: PaymentsService | undefined, orderId: number, total: number) {
  const tax = await payments?.orderTax(orderId);
  if (!tax) return undefined;
  const amount = visit.money(tax.amount);
  return {
    label: visit.t('order.tax', { country: tax.country }).trim(),
    text: tax.inclusive ? visit.t('order.taxIncluded', { tax: amount }) : visit.t('order.taxAdded', { tax: amount, paid: visit.money(total + tax.amount) }),
    number: tax.sellerTaxNumber,
  };
}

/** The account page (balance, ledger, orders) and one order followed live. */
function orderRoutes(pages: PageRouter, site: Site, peers: AccountPeers, opts: AccountOptions): void {
  const { store } = peers;
  pages.get(
    '/account',
    async (visit) => {
      const user = visit.player!.user;
      const credits = peers.credits();
      const delivery = peers.delivery();
      const [orders, balance, ledger] = await Promise.all([store.ordersOf(user.id), credits?.balance(user.id), credits?.history(user.id, { limit: 20 })]);
      const latest = orders.slice(0, ORDERS_SHOWN);
      // By the orders' ids, not the account's: a guest's order later joined to the account keeps its commands under no account.
      const rows = delivery && latest.length ? await delivery.listQueue({ orderIds: latest.map((o) => Number(o.id)), page: 1, perPage: 1000 }) : [];
      const names = await serverNames(delivery, rows);
      const shown = latest.map((o) => orderView(visit, o, rows, names));
      return site.page(
        visit,
        'account',
        { title: visit.t('account.title') },
        {
          balance: balance === undefined ? undefined : visit.money(balance),
          ledger: ledger?.map((e) => ({ date: visit.date(e.createdAt), reason: e.reason, delta: visit.money(e.delta), balance: visit.money(e.balance) })),
          orders: shown,
          live: shown.some((o) => LIVE.includes(o.state)),
          pollSeconds: opts.pollSeconds,
          chat: user.linkedAccounts.chat,
          twoFactor: user.authStatus === 1,
          supportOn: peers.support() !== undefined,
          topUpOn: await topUpOffered(peers.payments()),
          subscriptions: await accountSubscriptions(visit, peers.subscriptions?.(), user.id),
        },
      );
    },
    { signedIn: true },
  );

  pages.get(
    '/account/orders/:id',
    async (visit) => {
      const idText = (visit.request.params as { id: string }).id;
      const orderId = /^[0-9]{1,15}$/.test(idText) ? Number(idText) : 0;
      const found = orderId
        ? await store.getOrder(orderId).catch((err: unknown) => {
            if (refused(err)) return undefined;
            throw err;
          })
        : undefined;
      if (!found || Number(found.order.accountID) !== visit.player!.user.id)
        return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
      return orderPage(visit, found, site.u(`/account/orders/${orderId}`));
    },
    { signedIn: true },
  );

  // A guest's order, by the link of its mailed receipt: the token is the only key a guest holds.
  pages.get('/order/:token', async (visit) => {
    const token = (visit.request.params as { token: string }).token;
    const orderId = await peers.email()?.guestOrder(token);
    const found = orderId
      ? await store.getOrder(orderId).catch((err: unknown) => {
          if (refused(err)) return undefined;
          throw err;
        })
      : undefined;
    if (!found) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
    return orderPage(visit, found, site.u(`/order/${token}`), found.order.guestName ?? undefined);
  });

  const orderPage = async (visit: Visit, found: Awaited<ReturnType<StoreOrders['getOrder']>>, self: string, guestName?: string) => {
    const { rows, names } = await deliveryRows(peers.delivery(), Number(found.order.id));
    const order = orderView(visit, found.order, rows, names);
    const tax = await taxView(visit, peers.payments(), Number(found.order.id), parseMoney(found.order.total) ?? 0);
    return site.page(
      visit,
      'order',
      { title: visit.t('order.title', { id: order.id }) },
      { order, items: found.items, live: LIVE.includes(order.state), pollSeconds: opts.pollSeconds, self, guestName, tax },
    );
  };
}
