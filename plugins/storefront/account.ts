/** The player's side: sign-in (two-factor where enrolled), register, sign-out, the account, orders followed live, support tickets. */
import { DomainError } from '../../core/errors.ts';
import { parseMoney } from '../../core/format.ts';
import { localPath } from '../../core/pages.ts';
import type { AuthService } from '../auth/contract.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { DeliveryService, QueueRow } from '../delivery/contract.ts';
import type { EmailService } from '../email/contract.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { OrderRow, StoreOrders } from '../store/contract.ts';
import type { SupportService } from '../support/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { MessageKey } from './messages.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './routes.ts';
import { SESSION_COOKIE, type Site, type Visit } from './site.ts';

export interface AccountPeers {
  auth: AuthService;
  users: UsersService;
  store: StoreOrders;
  credits: () => CreditsService | undefined;
  delivery: () => DeliveryService | undefined;
  support: () => SupportService | undefined;
  payments: () => PaymentsService | undefined;
  /** Mail that works: SMTP set (the forgotten-password link and email verification). */
  email: () => EmailService | undefined;
}

export interface AccountOptions {
  pollSeconds: number;
  signInLimit: RateLimit;
  registerLimit: RateLimit;
}

export type OrderState = 'waiting' | 'delivered' | 'failed' | 'refunded' | 'complete';
/** States an order may still leave: its page keeps asking. */
export const LIVE: OrderState[] = ['waiting'];
const TITLE_MAX = 255;
/** Orders listed on the account page, newest first. */
const ORDERS_SHOWN = 50;
const MESSAGE_MAX = 5000;

/** Only a path of this storefront: a `next` parameter cannot send anyone elsewhere. */
function safeNext(site: Site, next: unknown): string {
  return localPath(next, site.base) ?? site.u('/account');
}

/** The names of the game servers that ran something of `rows`, when any did. */
async function serverNames(delivery: DeliveryService | undefined, rows: QueueRow[]): Promise<Map<string, string>> {
  if (!delivery || !rows.some((r) => r.status === 'done')) return new Map();
  return new Map((await delivery.listServers()).map((s) => [s.id, s.name]));
}

/** An order's queued commands and the servers' names (none without the delivery feature). */
export async function deliveryRows(delivery: DeliveryService | undefined, orderId: number): Promise<{ rows: QueueRow[]; names: Map<string, string> }> {
  const rows = delivery ? await delivery.listQueue({ orderId, page: 1, perPage: 100 }) : [];
  return { rows, names: await serverNames(delivery, rows) };
}

/** An order's delivery as the player sees it, from its purchase commands. */
export function stateOf(order: Pick<OrderRow, 'id' | 'status'>, rows: QueueRow[], names: Map<string, string>): { state: OrderState; servers: string } {
  if (order.status === 'refunded') return { state: 'refunded', servers: '' };
  const mine = rows.filter((r) => r.orderID === order.id && r.trigger === 'purchase');
  // Commands are queued with the order, in its transaction: none is nothing to deliver.
  if (!mine.length) return { state: 'complete', servers: '' };
  if (mine.some((r) => r.status === 'waiting' || r.status === 'claimed')) return { state: 'waiting', servers: '' };
  if (mine.some((r) => r.status === 'failed')) return { state: 'failed', servers: '' };
  const servers = [...new Set(mine.filter((r) => r.status === 'done').map((r) => names.get(r.serverID) ?? `#${r.serverID}`))];
  return servers.length ? { state: 'delivered', servers: servers.join(', ') } : { state: 'complete', servers: '' };
}

export function accountRoutes(pages: PageRouter, site: Site, peers: AccountPeers, opts: AccountOptions): void {
  const { auth, users, store } = peers;

  // ---- sign-in, register, sign-out

  const signInPage = (visit: Visit, values: Record<string, string>, errors: Record<string, string> = {}, status = 200, unverified = false) =>
    site.page(visit, 'signin', { title: visit.t('signIn.title'), status, canonical: '/login' }, {
      values, errors, next: values.next ?? '', mail: peers.email() !== undefined, unverified: unverified && peers.email()?.verificationRequired,
    });

  const open = async (visit: Visit, userId: number) => {
    const token = await auth.createSession(userId, { ip: visit.request.ip, useragent: String(visit.request.headers['user-agent'] ?? '').slice(0, 512) });
    site.setCookie(visit.request, visit.reply, SESSION_COOKIE, token);
  };

  pages.get('/login', async (visit, query) => {
    if (visit.player) return site.redirect(visit, safeNext(site, query.next));
    return signInPage(visit, { next: query.next ?? '' });
  });

  pages.post('/login', async (visit, form) => {
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
      await open(visit, check.userId);
      return site.redirect(visit, safeNext(site, next), visit.t('signIn.done', { name: user.username }));
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err.code === 'USER_NOT_FOUND' || err.code === 'WRONG_PASSWORD') return refuse({ _form: visit.t('signIn.wrong') }, 401);
      if (err.code === 'WRONG_CODE') return refuse({ code: visit.t('signIn.codeWrong') }, 401);
      if (err.code === 'RATE_LIMITED') return refuse({ _form: err.message }, 429);
      throw err;
    }
  }, { limit: { name: 'sign-in', rate: opts.signInLimit } });

  const registerPage = (visit: Visit, values: Record<string, string>, errors: Record<string, string> = {}, status = 200) =>
    site.page(visit, 'register', { title: visit.t('register.title'), status, canonical: '/register' }, {
      values, errors, emailRequired: site.settings().registrationEmailRequired, passwordMin: auth.passwordLength.min, passwordMax: auth.passwordLength.max,
    });

  pages.get('/register', async (visit) => (visit.player ? site.redirect(visit, site.u('/account')) : registerPage(visit, {})));

  pages.post('/register', async (visit, form) => {
    const values = { username: (form.username ?? '').trim(), email: (form.email ?? '').trim() };
    const fieldOf: Record<string, string> = {
      USERNAME_ALREADY_EXIST: 'username', INVALID_USERNAME: 'username', EMAIL_ALREADY_EXIST: 'email', INVALID_EMAIL: 'email', INVALID_PASSWORD: 'password',
    };
    try {
      const made = await auth.register({ username: values.username, password: form.password ?? '', email: values.email },
        { ip: visit.request.ip, useragent: String(visit.request.headers['user-agent'] ?? '').slice(0, 512) });
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
      return registerPage(visit, values, { [fieldOf[err.code] ?? (err.code === 'VALIDATION_ERROR' ? 'email' : '_form')]: message }, 422);
    }
  }, { limit: { name: 'register', rate: opts.registerLimit } });

  pages.post('/logout', async (visit) => {
    if (visit.player) await auth.endSession(visit.player.token);
    site.setCookie(visit.request, visit.reply, SESSION_COOKIE, '', 0);
    return site.redirect(visit, site.u('/'), visit.t('signOut.done'));
  });

  const orderView = (visit: Visit, order: OrderRow, rows: QueueRow[], names: Map<string, string>) => {
    const { state, servers } = stateOf(order, rows, names);
    return {
      id: order.id, state, status: visit.t(`order.status.${state}` as MessageKey, { servers }),
      total: visit.money(parseMoney(order.total) ?? 0), date: order.creationDate.slice(0, 16),
    };
  };

  pages.get('/account', async (visit) => {
    const user = visit.player!.user;
    const credits = peers.credits();
    const delivery = peers.delivery();
    const [orders, balance, ledger] = await Promise.all([store.ordersOf(user.id), credits?.balance(user.id), credits?.history(user.id, { limit: 20 })]);
    const latest = orders.slice(0, ORDERS_SHOWN);
    // By the orders' ids, not the account's: a guest's order later joined to the account keeps its commands under no account.
    const rows = delivery && latest.length ? await delivery.listQueue({ orderIds: latest.map((o) => Number(o.id)), page: 1, perPage: 1000 }) : [];
    const names = await serverNames(delivery, rows);
    const shown = latest.map((o) => orderView(visit, o, rows, names));
    return site.page(visit, 'account', { title: visit.t('account.title') }, {
      balance: balance === undefined ? undefined : visit.money(balance),
      ledger: ledger?.map((e) => ({ date: visit.date(e.createdAt), reason: e.reason, delta: visit.money(e.delta), balance: visit.money(e.balance) })),
      orders: shown, live: shown.some((o) => LIVE.includes(o.state)), pollSeconds: opts.pollSeconds,
      chat: user.linkedAccounts.chat, twoFactor: user.authStatus === 1, supportOn: peers.support() !== undefined,
      topUpOn: (peers.payments()?.availableGateways().length ?? 0) > 0,
    });
  }, { signedIn: true });

  pages.get('/account/orders/:id', async (visit) => {
    const idText = (visit.request.params as { id: string }).id;
    const orderId = /^[0-9]{1,15}$/.test(idText) ? Number(idText) : 0;
    const found = orderId ? await store.getOrder(orderId).catch((err: unknown) => { if (refused(err)) return undefined; throw err; }) : undefined;
    if (!found || Number(found.order.accountID) !== visit.player!.user.id) return site.message(visit, 404, visit.t('error.notFound'),
      visit.t('error.notFoundText'));
    const { rows, names } = await deliveryRows(peers.delivery(), orderId);
    const order = orderView(visit, found.order, rows, names);
    return site.page(visit, 'order', { title: visit.t('order.title', { id: order.id }) }, {
      order, items: found.items, live: LIVE.includes(order.state), pollSeconds: opts.pollSeconds,
    });
  }, { signedIn: true });

  // ---- support tickets

  const ticketsPage = async (visit: Visit, support: SupportService, values: Record<string, string> = {}, errors: Record<string, string> = {}, status = 200) => {
    const [tickets, categories] = await Promise.all([support.ticketsOf(visit.player!.user.id), support.listCategories({ limit: 100 })]);
    return site.page(visit, 'tickets', { title: visit.t('tickets.title'), status, alert: errors._form }, {
      tickets: tickets.map((tk) => ({
        id: tk.id, title: tk.title, category: tk.categoryName, updated: tk.updateDate.slice(0, 16),
        status: visit.t(`tickets.status.${tk.statusID}` as MessageKey),
      })),
      categories: categories.map((c) => ({ value: c.id, label: c.name })), values, errors,
    });
  };
  const withSupport = (handler: (visit: Visit, support: SupportService, form: Record<string, string>) => Promise<ReturnType<Site['page']>>) =>
    async (visit: Visit, form: Record<string, string>) => {
      const support = peers.support();
      if (!support) return site.message(visit, 404, visit.t('error.notFound'), visit.t('tickets.unavailable'));
      return handler(visit, support, form);
    };
  const text = (form: Record<string, string>, name: string, max: number, t: Visit['t'], errors: Record<string, string>) => {
    const value = (form[name] ?? '').trim();
    if (!value) errors[name] = t('error.required');
    else if (value.length > max) errors[name] = t('error.tooLong', { max });
    return value;
  };

  pages.get('/account/tickets', withSupport((visit, support) => ticketsPage(visit, support)), { signedIn: true });

  pages.post('/account/tickets', withSupport(async (visit, support, form) => {
    const errors: Record<string, string> = {};
    const values = { category: form.category ?? '', title: text(form, 'title', TITLE_MAX, visit.t, errors),
      message: text(form, 'message', MESSAGE_MAX, visit.t, errors) };
    const categoryId = /^[0-9]{1,15}$/.test(values.category) ? Number(values.category) : 0;
    if (!categoryId) errors.category = visit.t('error.required');
    if (Object.keys(errors).length) return ticketsPage(visit, support, values, errors, 422);
    try {
      const id = await support.createTicket({ author: { accountId: visit.player!.user.id }, categoryId, title: values.title, message: values.message });
      return site.redirect(visit, site.u(`/account/tickets/${id}`), visit.t('tickets.created'));
    } catch (err) {
      if (!refused(err)) throw err;
      return ticketsPage(visit, support, values, { category: refusal(visit, err) }, 422);
    }
  }), { signedIn: true });

  /** The player's own ticket, or undefined (someone else's is not found either). */
  const ownTicket = async (visit: Visit, support: SupportService) => {
    const idText = (visit.request.params as { id: string }).id;
    const id = /^[0-9]{1,15}$/.test(idText) ? Number(idText) : 0;
    const ticket = id ? await support.getTicket(id).catch((err: unknown) => { if (refused(err)) return undefined; throw err; }) : undefined;
    return ticket && Number(ticket.accountID) === visit.player!.user.id ? ticket : undefined;
  };

  const ticketPage = async (visit: Visit, support: SupportService, values: Record<string, string> = {}, errors: Record<string, string> = {}, status = 200) => {
    const ticket = await ownTicket(visit, support);
    if (!ticket) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
    return site.page(visit, 'ticket', { title: ticket.title, status, alert: errors._form }, {
      ticket: { id: ticket.id, title: ticket.title, category: ticket.category.name, status: visit.t(`tickets.status.${ticket.statusID}` as MessageKey),
        open: ticket.statusID !== '4' },
      messages: ticket.messages.map((m) => ({ mine: m.accountID === ticket.accountID, date: m.creationDate.slice(0, 16), text: m.message })),
      values, errors,
    });
  };

  pages.get('/account/tickets/:id', withSupport((visit, support) => ticketPage(visit, support)), { signedIn: true });

  pages.post('/account/tickets/:id/reply', withSupport(async (visit, support, form) => {
    const ticket = await ownTicket(visit, support);
    if (!ticket) return ticketPage(visit, support);
    const errors: Record<string, string> = {};
    const message = text(form, 'message', MESSAGE_MAX, visit.t, errors);
    if (errors.message) return ticketPage(visit, support, { message }, errors, 422);
    try {
      await support.postMessage(Number(ticket.id), { author: { accountId: visit.player!.user.id }, message, isAdmin: false });
    } catch (err) {
      if (!refused(err)) throw err;
      return ticketPage(visit, support, { message }, { _form: refusal(visit, err) }, 409);
    }
    return site.redirect(visit, site.u(`/account/tickets/${ticket.id}`), visit.t('tickets.replied'));
  }), { signedIn: true });

  pages.post('/account/tickets/:id/close', withSupport(async (visit, support) => {
    const ticket = await ownTicket(visit, support);
    if (!ticket) return ticketPage(visit, support);
    await support.closeTicket(Number(ticket.id));
    return site.redirect(visit, site.u(`/account/tickets/${ticket.id}`), visit.t('tickets.closed'));
  }), { signedIn: true });
}
