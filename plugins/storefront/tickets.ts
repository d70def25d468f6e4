/** The player's support tickets: open one, follow it, reply, close it. Not found without the support feature. */
import type { SupportService } from '../support/contract.ts';
import type { MessageKey } from './messages.ts';
import { refusal, refused, type PageRouter } from './router.ts';
import type { Site, Visit } from './site.ts';

const TITLE_MAX = 255;
const MESSAGE_MAX = 5000;

type Fields = Record<string, string>;
type SupportHandler = (visit: Visit, support: SupportService, form: Fields) => Promise<ReturnType<Site['page']>>;

/** A form's trimmed text; an empty or too long one is written into `errors`. */
function text(form: Fields, name: string, max: number, t: Visit['t'], errors: Fields): string {
  const value = (form[name] ?? '').trim();
  if (!value) errors[name] = t('error.required');
  else if (value.length > max) errors[name] = t('error.tooLong', { max });
  return value;
}

async function ticketsPage(site: Site, visit: Visit, support: SupportService, values: Fields = {}, errors: Fields = {}, status = 200) {
  const [tickets, categories] = await Promise.all([support.ticketsOf(visit.player!.user.id), support.listCategories({ limit: 100 })]);
  return site.page(
    visit,
    'tickets',
    { title: visit.t('tickets.title'), status, alert: errors._form },
    {
      tickets: tickets.map((tk) => ({
        id: tk.id,
        title: tk.title,
        category: tk.categoryName,
        updated: tk.updateDate.slice(0, 16),
        status: visit.t(`tickets.status.${tk.statusID}` as MessageKey),
      })),
      categories: categories.map((c) => ({ value: c.id, label: c.name })),
      values,
      errors,
    },
  );
}

/** The player's own ticket, or undefined (someone else's is not found either). */
async function ownTicket(visit: Visit, support: SupportService) {
  const idText = (visit.request.params as { id: string }).id;
  const id = /^[0-9]{1,15}$/.test(idText) ? Number(idText) : 0;
  const ticket = id
    ? await support.getTicket(id).catch((err: unknown) => {
        if (refused(err)) return undefined;
        throw err;
      })
    : undefined;
  return ticket && Number(ticket.accountID) === visit.player!.user.id ? ticket : undefined;
}

async function ticketPage(site: Site, visit: Visit, support: SupportService, values: Fields = {}, errors: Fields = {}, status = 200) {
  const ticket = await ownTicket(visit, support);
  if (!ticket) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
  return site.page(
    visit,
    'ticket',
    { title: ticket.title, status, alert: errors._form },
    {
      ticket: {
        id: ticket.id,
        title: ticket.title,
        category: ticket.category.name,
        status: visit.t(`tickets.status.${ticket.statusID}` as MessageKey),
        open: ticket.statusID !== '4',
      },
      messages: ticket.messages.map((m) => ({ mine: m.accountID === ticket.accountID, date: m.creationDate.slice(0, 16), text: m.message })),
      values,
      errors,
    },
  );
}

const createTicket =
  (site: Site): SupportHandler =>
  async (visit, support, form) => {
    const errors: Fields = {};
    const values = {
      category: form.category ?? '',
      title: text(form, 'title', TITLE_MAX, visit.t, errors),
      message: text(form, 'message', MESSAGE_MAX, visit.t, errors),
    };
    const categoryId = /^[0-9]{1,15}$/.test(values.category) ? Number(values.category) : 0;
    if (!categoryId) errors.category = visit.t('error.required');
    if (Object.keys(errors).length) return ticketsPage(site, visit, support, values, errors, 422);
    try {
      const id = await support.createTicket({ author: { accountId: visit.player!.user.id }, categoryId, title: values.title, message: values.message });
      return site.redirect(visit, site.u(`/account/tickets/${id}`), visit.t('tickets.created'));
    } catch (err) {
      if (!refused(err)) throw err;
      return ticketsPage(site, visit, support, values, { category: refusal(visit, err) }, 422);
    }
  };

const replyToTicket =
  (site: Site): SupportHandler =>
  async (visit, support, form) => {
    const ticket = await ownTicket(visit, support);
    if (!ticket) return ticketPage(site, visit, support);
    const errors: Fields = {};
    const message = text(form, 'message', MESSAGE_MAX, visit.t, errors);
    if (errors.message) return ticketPage(site, visit, support, { message }, errors, 422);
    try {
      await support.postMessage(Number(ticket.id), { author: { accountId: visit.player!.user.id }, message, isAdmin: false });
    } catch (err) {
      if (!refused(err)) throw err;
      return ticketPage(site, visit, support, { message }, { _form: refusal(visit, err) }, 409);
    }
    return site.redirect(visit, site.u(`/account/tickets/${ticket.id}`), visit.t('tickets.replied'));
  };

const closeTicket =
  (site: Site): SupportHandler =>
  async (visit, support) => {
    const ticket = await ownTicket(visit, support);
    if (!ticket) return ticketPage(site, visit, support);
    await support.closeTicket(Number(ticket.id));
    return site.redirect(visit, site.u(`/account/tickets/${ticket.id}`), visit.t('tickets.closed'));
  };

export function ticketRoutes(pages: PageRouter, site: Site, support: () => SupportService | undefined): void {
  const withSupport = (handler: SupportHandler) => async (visit: Visit, form: Fields) => {
    const found = support();
    if (!found) return site.message(visit, 404, visit.t('error.notFound'), visit.t('tickets.unavailable'));
    return handler(visit, found, form);
  };
  const signedIn = { signedIn: true };
  pages.get(
    '/account/tickets',
    withSupport((visit, found) => ticketsPage(site, visit, found)),
    signedIn,
  );
  pages.post('/account/tickets', withSupport(createTicket(site)), signedIn);
  pages.get(
    '/account/tickets/:id',
    withSupport((visit, found) => ticketPage(site, visit, found)),
    signedIn,
  );
  pages.post('/account/tickets/:id/reply', withSupport(replyToTicket(site)), signedIn);
  pages.post('/account/tickets/:id/close', withSupport(closeTicket(site)), signedIn);
}
