/** The storefront's pages: browsing, the basket and paying from the balance. */
import type { DomainError } from '../../core/errors.ts';
import { hasControlCharacter } from '../../core/format.ts';
import type { DonationsService } from '../donations/contract.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { CodeSender, RequestedLine, ShownProduct, StoreCatalogue, StoreCheckout } from '../store/contract.ts';
import type { PaymentsService } from '../payments/contract.ts';
import type { PromotionsService } from '../promotions/contract.ts';
import type { SubscriptionsService } from '../subscriptions/contract.ts';
import type { VotesService } from '../votes/contract.ts';
import {
  addLine,
  BASKET_COOKIE,
  CODES_COOKIE,
  codeOf,
  MAX_QUANTITY,
  parseQuantity,
  readCodes,
  writeBasket,
  writeCodes,
  type BasketCodes,
  type BasketLine,
} from './basket.ts';
import { allProducts, pathTo, plainText, rulesText, visibleCategories, type Catalogue } from './catalogue.ts';
import { billingOf, gatewayName, payRefused, type Payments } from './payments.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './router.ts';
import type { ServerStatusCache } from './server-status.ts';
import type { Site, Visit } from './site.ts';
import { basketOffers, offerFor, type SubscriptionOffer } from './subscribe.ts';

export interface Peers {
  store: StoreCatalogue & StoreCheckout;
  payments: () => PaymentsService | undefined;
  pay: Payments;
  credits?: () => CreditsService | undefined;
  donations?: () => DonationsService | undefined;
  votes?: () => VotesService | undefined;
  promotions?: () => PromotionsService | undefined;
  subscriptions?: () => SubscriptionsService | undefined;
  /** The game server's player count, pinged from here and cached. */
  serverStatus?: ServerStatusCache;
}

/** A refusal of the player's codes: too many wrong ones says how long to wait. */
function codeRefusal(visit: Visit, err: DomainError): string {
  if (err.code !== 'RATE_LIMITED') return refusal(visit, err);
  return visit.t('codes.tooMany', { after: `${Math.max(1, Math.ceil((err.retryAfterSeconds ?? 60) / 60))} min` });
}

/** Who sends the basket's codes, for the limits on wrong ones: the address, and a guest's session (a player counts by account). */
const senderOf = (visit: Visit): CodeSender => ({ address: visit.request.ip, session: visit.player ? undefined : visit.csrf });

export interface CatalogueOptions {
  basketMaxLines: number;
  searchMinLength: number;
  checkoutLimit: RateLimit;
}

/** What the catalogue's, basket's and checkout's pages share. */
interface Shop {
  site: Site;
  catalogue: Catalogue;
  peers: Peers;
  opts: CatalogueOptions;
}

type BasketView = Awaited<ReturnType<typeof basketView>>;

export function catalogueRoutes(pages: PageRouter, site: Site, catalogue: Catalogue, peers: Peers, opts: CatalogueOptions): void {
  const shop: Shop = { site, catalogue, peers, opts };
  browseRoutes(pages, shop);
  basketRoutes(pages, shop);
  checkoutRoutes(pages, shop);
}

const notFound = (site: Site, visit: Visit) => site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
const idOf = (text: string | undefined) => (/^[0-9]{1,15}$/.test(text ?? '') ? Number(text) : 0);

function productPage(
  { site, catalogue }: Shop,
  visit: Visit,
  product: ShownProduct,
  path: { id: number; name: string }[],
  rules: string[],
  alert?: string,
  offer?: SubscriptionOffer,
) {
  const view = catalogue.product(visit, product, true);
  const summary = plainText(product.details, 155);
  return site.page(
    visit,
    'product',
    { title: product.name, description: summary || product.name, canonical: `/product/${product.id}`, alert, status: alert ? 422 : 200 },
    {
      p: view,
      rules,
      crumbs: path.map((c) => ({ id: c.id, name: c.name })),
      maxQuantity: MAX_QUANTITY,
      offer,
    },
  );
}

/** The home page, a category, a product and the search. */
/** The address players join at and, when the server answers its list ping, how many play now. */
async function gameServer({ site, peers }: Shop): Promise<{ address: string; online?: number; max?: number } | undefined> {
  const address = site.settings().storefrontServerAddress;
  if (!address || !peers.serverStatus) return undefined;
  const status = await peers.serverStatus.status(address);
  return { address, ...status };
}

/** The biggest sale running, as its banner says it: its name, how much off and when it ends. */
async function saleBanner({ peers }: Shop, visit: Visit): Promise<{ text: string } | undefined> {
  const [sale] = (await peers.promotions?.()?.runningSales(visit.at)) ?? [];
  return sale && { text: visit.t('sale.banner', { name: sale.name, percent: sale.percent, end: visit.date(sale.endDate) }) };
}

function browseRoutes(pages: PageRouter, shop: Shop): void {
  const { site, catalogue, peers, opts } = shop;
  const { store } = peers;

  pages.get('/', async (visit) => {
    const donations = peers.donations?.();
    const votes = peers.votes?.();
    const tz = site.settings().timezone;
    const shown = store.shownCategories();
    const [categories, featured, top, latest, links, goal, sale, server] = await Promise.all([
      shown,
      store.shownProducts({ featuredOnly: true }, shown),
      donations?.board('top-monthly', 5, tz),
      donations?.board('latest', 5, tz),
      votes?.linksFor(visit.player?.user.username),
      peers.promotions?.()?.communityGoal(),
      saleBanner(shop, visit),
      gameServer(shop),
    ]);
    const visible = visibleCategories(categories);
    const board = (rows: { username: string; amount: number }[] | undefined) =>
      (rows ?? []).map((d) => ({ username: d.username, amount: visit.money(d.amount) }));
    return site.page(
      visit,
      'home',
      { title: visit.t('home.title'), description: site.settings().storefrontDescription, canonical: '/' },
      {
        featured: featured.map((p) => catalogue.product(visit, p)),
        categories: [...visible.values()].filter((c) => c.parentId === 0).map((c) => ({ id: c.id, name: c.name })),
        sale,
        server,
        boards: donations ? { top: board(top), latest: board(latest) } : undefined,
        votes: links,
        goal: goal?.isActive
          ? {
              percent: Math.min(100, Math.floor((goal.raised * 100) / goal.target)),
              text: visit.t('home.goalText', {
                raised: visit.money(goal.raised),
                target: visit.money(goal.target),
                percent: Math.floor((goal.raised * 100) / goal.target),
              }),
            }
          : undefined,
      },
    );
  });

  // A category by its id (all read at once) or by its slug (`/category/ranks`: the categories first), as players type and share it.
  pages.get('/category/:id', async (visit) => {
    const sent = (visit.request.params as { id: string }).id;
    const shown = store.shownCategories();
    const categoryId = idOf(sent) || ((await shown).find((c) => c.slug !== '' && c.slug.toLowerCase() === sent.toLowerCase())?.id ?? 0);
    const [categories, products, sale] = await Promise.all([shown, store.shownProducts({ categoryIds: [categoryId] }, shown), saleBanner(shop, visit)]);
    const visible = visibleCategories(categories);
    const path = pathTo(visible, categoryId);
    if (!path) return notFound(site, visit);
    const category = path.at(-1)!;
    return site.page(
      visit,
      'category',
      {
        title: category.name,
        description: category.gameDescription || `${category.name} · ${site.settings().storefrontTitle}`,
        canonical: `/category/${category.id}`,
      },
      {
        category: { id: category.id, name: category.name },
        crumbs: path.slice(0, -1).map((c) => ({ id: c.id, name: c.name })),
        subcategories: [...visible.values()].filter((c) => c.parentId === category.id).map((c) => ({ id: c.id, name: c.name })),
        products: products.map((p) => catalogue.product(visit, p)),
        sale,
        // Beside the products on wide screens: the top-level categories, this one's branch marked.
        side: [...visible.values()]
          .filter((c) => c.parentId === 0)
          .map((c) => ({ id: c.id, name: c.name, current: c.id === category.id ? 'page' : c.id === path[0]!.id ? 'true' : '' })),
      },
    );
  });

  pages.get('/product/:id', async (visit) => {
    const productId = idOf((visit.request.params as { id: string }).id);
    const shown = store.shownCategories();
    const [categories, [product], rules] = await Promise.all([shown, store.shownProducts({ ids: [productId] }, shown), store.rulesFor([productId])]);
    const path = product && pathTo(visibleCategories(categories), product.categoryId);
    if (!product || !path) return notFound(site, visit);
    const own = rules.get(productId);
    const required = own && own.requiredProductId > 0 ? await store.productName(own.requiredProductId) : undefined;
    const offer = await offerFor(visit, shop.peers.subscriptions, productId);
    return productPage(shop, visit, product, path, own ? rulesText(visit.t, own, required) : [], undefined, offer);
  });

  pages.get('/search', async (visit, query) => {
    const q = (query.q ?? '').trim().slice(0, 100);
    const short = q.length > 0 && q.length < opts.searchMinLength;
    const needle = q.toLowerCase();
    const products =
      q && !short
        ? allProducts(await store.tree({ activeOnly: true }))
            .filter((p) => p.name.toLowerCase().includes(needle))
            .slice(0, 60)
        : [];
    return site.page(
      visit,
      'search',
      { title: q ? visit.t('search.results', { q }) : visit.t('search.title') },
      {
        q,
        short: short ? opts.searchMinLength : 0,
        products: products.map((p) => catalogue.product(visit, p)),
      },
    );
  });
}

// ---- the basket

const saveBasket = (site: Site, visit: Visit, lines: BasketLine[]) =>
  site.setCookie(visit.request, visit.reply, BASKET_COOKIE, writeBasket(lines), lines.length ? 30 * 86400 : 0);

const codesOf = (visit: Visit) => readCodes(visit.request.cookies[CODES_COOKIE]);
const saveCodes = (site: Site, visit: Visit, codes: BasketCodes) =>
  site.setCookie(visit.request, visit.reply, CODES_COOKIE, writeCodes(codes), codes.coupon || codes.giftCard ? 86400 : 0);
const requestedOf = (lines: BasketLine[]): RequestedLine[] =>
  lines.map((l) => ({
    productId: l.productId,
    sentId: String(l.productId),
    quantity: l.quantity,
    variables: new Map(Object.entries(l.variables)),
  }));

/**
 * What the codes take off the basket (the store's quote: its sale prices, then the coupon, then
 * the gift card) and what is left to pay; a code that does not apply is said instead, and the
 * other code typed with it still applies alone (`applied`: the codes taken).
 */
interface Priced {
  adjustments: { label: string; amount: string }[];
  toPay: number;
  applied: BasketCodes;
  codeError?: string;
  limited?: boolean;
}

async function withCodes(shop: Shop, visit: Visit, kept: BasketLine[], total: number, codes: BasketCodes): Promise<Priced> {
  if (!(codes.coupon || codes.giftCard) || !kept.length) return { adjustments: [], toPay: total, applied: codes };
  try {
    return { ...(await quoted(shop, visit, kept, codes)), applied: codes };
  } catch (err) {
    if (!refused(err)) throw err;
    const refusal = { codeError: codeRefusal(visit, err), limited: err.code === 'RATE_LIMITED' };
    const field = err.details?.field;
    const other = field === 'coupon' ? { giftCard: codes.giftCard } : field === 'giftCard' ? { coupon: codes.coupon } : {};
    if (other.coupon || other.giftCard) {
      try {
        return { ...(await quoted(shop, visit, kept, other)), applied: other, ...refusal };
      } catch (again) {
        if (!refused(again)) throw again;
      }
    }
    return { adjustments: [], toPay: total, applied: {}, ...refusal };
  }
}

async function quoted({ peers: { store } }: Shop, visit: Visit, kept: BasketLine[], codes: BasketCodes) {
  // A guest's name is typed at payment; the coupon's per-player count is checked again then.
  const quote = await store.quote(visit.player ? { userId: visit.player.user.id } : { guestName: 'guest' }, requestedOf(kept), {
    ...codes,
    sender: senderOf(visit),
  });
  return {
    toPay: quote.total,
    adjustments: quote.adjustments.map((a) => ({
      label: visit.t(a.kind === 'coupon' ? 'codes.couponLine' : 'codes.giftCardLine', { code: a.code }),
      amount: `−${visit.money(a.amount)}`,
    })),
  };
}

/** The basket's lines with the catalogue's current products; lines whose product is gone are dropped (and said). */
async function basketView(shop: Shop, visit: Visit, codes = codesOf(visit)) {
  const {
    site,
    catalogue,
    peers: { store },
  } = shop;
  const products = new Map((visit.basket.length ? await store.shownProducts({ ids: visit.basket.map((l) => l.productId) }) : []).map((p) => [p.id, p]));
  const kept = visit.basket.filter((l) => products.has(l.productId));
  if (kept.length !== visit.basket.length) saveBasket(site, visit, kept);
  let total = 0;
  const renews = await basketOffers(visit, shop.peers.subscriptions, kept);
  const lines = kept.map((l) => {
    const view = catalogue.product(visit, products.get(l.productId)!);
    total += view.cents * l.quantity;
    return {
      id: l.productId,
      name: view.name,
      unit: view.price,
      quantity: l.quantity,
      total: visit.money(view.cents * l.quantity),
      variables: Object.entries(l.variables).map(([name, value]) => ({ name, value })),
      renews: renews.get(l.productId),
    };
  });
  return { lines, kept, total, gone: kept.length !== visit.basket.length, codes, ...(await withCodes(shop, visit, kept, total, codes)) };
}

/** What a guest typed at a gateway's checkout, and what was wrong with it. */
interface GuestFields {
  guestName?: string;
  guestError?: string;
  guestEmail?: string;
  guestEmailError?: string;
  billingCountry?: string;
  billingError?: string;
}

/** The basket page; `view` when the request has judged its codes already (judged again, a wrong one would count twice). */
async function basketPage(shop: Shop, visit: Visit, alert?: string, status?: number, guest: GuestFields = {}, typed?: BasketCodes, view?: BasketView) {
  const { site, peers } = shop;
  const { lines, total, gone, codes, adjustments, toPay, codeError } = view ?? (await basketView(shop, visit, typed));
  const credits = peers.credits?.();
  const balance = visit.player && credits ? visit.money(await credits.balance(visit.player.user.id)) : undefined;
  const gateways = (peers.payments()?.availableGateways() ?? []).map((id) => ({ id, name: gatewayName(id) }));
  return site.page(
    visit,
    'basket',
    { title: visit.t('basket.title'), alert: alert ?? (gone ? visit.t('basket.gone') : undefined), status },
    {
      lines,
      subtotal: visit.money(total),
      total: visit.money(toPay),
      adjustments,
      codes,
      codeError,
      balance,
      maxQuantity: MAX_QUANTITY,
      gateways,
      guestEmailAsked: site.settings().guestEmail,
      taxAsked: site.settings().taxMode !== 'off',
      ...guest,
    },
  );
}

/** A product line put in the basket: its quantity and variables checked, or the product page saying what is wrong. */
async function addToBasket(shop: Shop, visit: Visit, form: Record<string, string>) {
  const {
    site,
    peers: { store },
    opts,
  } = shop;
  const productId = idOf(form.product);
  const [product] = productId ? await store.shownProducts({ ids: [productId] }) : [];
  if (!product) return notFound(site, visit);
  const back = (alert: string) => productPage(shop, visit, product, [], [], alert);
  const quantity = parseQuantity(form.quantity ?? '1');
  if (!quantity) return back(visit.t('error.INVALID_QUANTITY', { max: MAX_QUANTITY }));
  const variables: Record<string, string> = {};
  for (const v of product.variables) {
    const sent = form[`var_${v.name}`] ?? '';
    // A value may be rendered into a game command, where a line break starts a command of its own.
    if (hasControlCharacter(sent)) return back(visit.t('error.INVALID_VARIABLE', { detail: `${v.name}: ${visit.t('error.controlCharacter')}` }));
    const value = sent.trim().slice(0, 255);
    if (!value) {
      if (v.required) return back(visit.t('error.INVALID_VARIABLE', { detail: `${v.name}: ${visit.t('error.required')}` }));
      continue;
    }
    if (v.values.length && !v.values.includes(value)) return back(visit.t('error.INVALID_VARIABLE', { detail: v.name }));
    variables[v.name] = value;
  }
  const lines = addLine(visit.basket, { productId, quantity, variables }, opts.basketMaxLines);
  if (!lines) return back(visit.t('basket.full'));
  saveBasket(site, visit, lines);
  return site.redirect(visit, site.u('/basket'), visit.t('basket.added', { name: product.name }));
}

/** The basket, its codes and its lines. */
function basketRoutes(pages: PageRouter, shop: Shop): void {
  const { site } = shop;

  pages.post('/basket/codes', async (visit, form) => {
    const typed = { coupon: codeOf(form.coupon), giftCard: codeOf(form.giftCard) };
    const view = await basketView(shop, visit, typed);
    const { codeError, kept, limited } = view;
    const unreadable = (['coupon', 'giftCard'] as const).some((f) => (form[f] ?? '').trim() !== '' && !typed[f]);
    if (codeError || unreadable) {
      const shown = { coupon: form.coupon?.trim().slice(0, 64), giftCard: form.giftCard?.trim().slice(0, 64) };
      // The code that applies is kept, so paying uses it; the refused one stays in the form to correct.
      if (codeError && (view.applied.coupon || view.applied.giftCard)) saveCodes(site, visit, view.applied);
      return basketPage(shop, visit, undefined, limited ? 429 : 422, {}, shown, codeError ? { ...view, codes: shown } : undefined);
    }
    const any = Boolean(typed.coupon || typed.giftCard) && kept.length > 0;
    saveCodes(site, visit, any ? typed : {});
    return site.redirect(visit, site.u('/basket'), visit.t(any ? 'codes.applied' : 'codes.removed'));
  });

  pages.get('/basket', async (visit) => basketPage(shop, visit));

  pages.post('/basket/add', async (visit, form) => addToBasket(shop, visit, form));

  pages.post('/basket/update', async (visit, form) => {
    const line = Number(form.line);
    const quantity = parseQuantity(form.quantity);
    if (!Number.isInteger(line) || !visit.basket[line]) return site.redirect(visit, site.u('/basket'));
    if (!quantity) return basketPage(shop, visit, visit.t('error.INVALID_QUANTITY', { max: MAX_QUANTITY }), 422);
    saveBasket(
      site,
      visit,
      visit.basket.map((l, i) => (i === line ? { ...l, quantity } : l)),
    );
    return site.redirect(visit, site.u('/basket'), visit.t('basket.updated'));
  });

  pages.post('/basket/remove', async (visit, form) => {
    const line = Number(form.line);
    saveBasket(
      site,
      visit,
      visit.basket.filter((_l, i) => i !== line),
    );
    return site.redirect(visit, site.u('/basket'), visit.t('basket.removed'));
  });
}

/** Paying for the basket: from the balance, or at a gateway. */
function checkoutRoutes(pages: PageRouter, shop: Shop): void {
  const { site, peers, opts } = shop;
  const limit = { name: 'checkout', rate: opts.checkoutLimit };

  pages.post(
    '/checkout',
    async (visit) => {
      const view = await basketView(shop, visit);
      if (!view.kept.length) return site.redirect(visit, site.u('/basket'));
      if (view.codeError) return basketPage(shop, visit, view.codeError, view.limited ? 429 : 409, {}, undefined, view);
      const { kept } = view;
      try {
        const result = await peers.store.buy(visit.player!.user.id, requestedOf(kept), 'storefront', { ...codesOf(visit), sender: senderOf(visit) });
        saveBasket(site, visit, []);
        saveCodes(site, visit, {});
        return site.redirect(visit, site.u(`/account/orders/${result.orderId}`), visit.t('checkout.done', { id: result.orderId }));
      } catch (err) {
        if (!refused(err)) throw err;
        return basketPage(shop, visit, codeRefusal(visit, err), err.code === 'RATE_LIMITED' ? 429 : 409);
      }
    },
    { signedIn: true, limit },
  );

  // Paid at a gateway: by the signed-in player, or by a guest for the in-game name typed.
  pages.post(
    '/checkout/gateway',
    async (visit, form) => {
      const payments = peers.payments();
      const gateway = form.gateway ?? '';
      if (!payments?.availableGateways().includes(gateway) || !visit.basket.length) return site.redirect(visit, site.u('/basket'));
      const guestName = visit.player ? undefined : (form.guestName ?? '').trim().slice(0, 64);
      const guestEmail = visit.player ? undefined : (form.guestEmail ?? '').trim().slice(0, 191);
      try {
        const started = await payments.startPurchase({
          gateway,
          ...(visit.player ? { userId: visit.player.user.id } : { guestName, guestEmail }),
          lines: visit.basket.map((l) => ({ productId: l.productId, quantity: l.quantity, variables: l.variables })),
          ...peers.pay.urls(visit, '/basket'),
          codes: { ...codesOf(visit), sender: senderOf(visit) },
          ...billingOf(visit, form),
        });
        saveBasket(site, visit, []);
        saveCodes(site, visit, {});
        return peers.pay.onward(visit, started, gateway);
      } catch (err) {
        if (!payRefused(err)) throw err;
        const message = codeRefusal(visit, err);
        if (err.code === 'INVALID_GUEST_NAME') return basketPage(shop, visit, undefined, 422, { guestName, guestEmail, guestError: message });
        if (err.code === 'INVALID_GUEST_EMAIL') return basketPage(shop, visit, undefined, 422, { guestName, guestEmail, guestEmailError: message });
        const billing = { guestName, guestEmail, billingCountry: form.billingCountry, billingError: message };
        if (err.code === 'VALIDATION_ERROR' && err.message.startsWith('billing')) return basketPage(shop, visit, undefined, 422, billing);
        return basketPage(shop, visit, message, err.code === 'GATEWAY_ERROR' ? 502 : err.code === 'RATE_LIMITED' ? 429 : 409, { guestName, guestEmail });
      }
    },
    { limit },
  );
}
