/**
 * The rush's mix (bench/rush.ts): what a launch's crowd sends, as one sequence each connection of
 * the load generator (bench/rush-load.ts) walks: per 120 requests, 68 storefront pages (home,
 * categories, products), 6 buys on credit (a third with the launch coupon) and 2 checkouts paid
 * through Stripe (one with the coupon; a quarter of the purchases), all in the category on sale, a
 * poll and an ack from each of the twenty game servers, and 2 reads of the console's dashboard. A
 * checkout is two requests: the player's `POST /api/payments/purchase`, then Stripe's signed
 * `checkout.session.completed` webhook for its session, which the load generator sends next on
 * the same connection (bench/rush-stripe.ts). The baseline walks the same sequence (its dashboard:
 * bench/dashboard.ts; its checkout: bench/base-checkout.ts).
 */
import type { BenchRequest } from './scenario.ts';

export type RushKind = 'page' | 'buy' | 'checkout' | 'complete' | 'poll' | 'ack' | 'dashboard';

export interface RushItem extends BenchRequest {
  kind: RushKind;
  /** Buys and checkouts: the players who take turns; the body's `"@buyer"` is replaced by the next one. */
  buyers?: string[];
  /** Buys: the products that take turns (`"@product"`), so every game server gets commands. */
  products?: string[];
  /** Buys: sent with an Idempotency-Key of its own (the idempotency variant). */
  idempotent?: boolean;
  /** Polls and acks: the game server's token. */
  token?: string;
  /** Completions: the secret Stripe signs its webhooks with. */
  secret?: string;
  /** Completions (the tax variant): Stripe Tax's rate for the buyers' country, which Stripe adds to the session's total. */
  tax?: { country: string; percent: number };
  /**
   * Completions (the testmode variant): staff pay the test checkout in the console (a 303 answers),
   * the path's `@payment` replaced by the payment; with none open, the test payment paid at the seed again.
   */
  testPay?: { paid: string };
  /**
   * Subscription checkouts (the subscriptions variant): the players and the monthly packages whose
   * pairs take turns, each pair once in the whole run (a player subscribes to a package once), and a period's price in cents.
   */
  subscribe?: { buyers: string[]; packages: string[]; price: number };
}

/** What the seed made, for the mix to point at. */
export interface Shop {
  key: string;
  categoryIds: string[];
  productIds: string[];
  /** The launch's products, on sale: product i runs its command on game server i. */
  launchIds: string[];
  tokens: string[];
  buyers: string[];
  coupon: string;
  /** Stripe's webhook signing secret, as the server and the baseline were given it. */
  stripeSecret: string;
  /** The staff session's CSRF token, which the console's forms carry. */
  csrf: string;
  /** The testmode variant: a test payment the seed paid (paying it again changes nothing). */
  paidTest?: string;
  /** The subscriptions variant: the monthly packages (product i runs its command on game server i), at `packagePrice` cents a month. */
  packageIds?: string[];
  packagePrice?: number;
  /** A staff member's console session, for the dashboard. */
  cookie: string;
}

/** A visitor who has a page open already (the CSRF cookie is set), as in bench/storefront.ts. */
const PAGE_HEADERS = { cookie: `storefront_csrf=${'c'.repeat(64)}`, 'accept-language': 'en-GB,en;q=0.9' };

/** A fixed shuffle (a small LCG), so every run walks the same sequence. */
function shuffled<T>(list: T[]): T[] {
  let seed = 52;
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * One walk: each game server polls once and acks what it was given, six buys (two with the
 * coupon), two checkouts at Stripe each followed by its completion, two dashboard reads, and pages:
 * home, categories and products.
 * Variant `idempotency` sends every buy with an Idempotency-Key; `tax`: the shop adds tax at checkout
 * (taxMode exclusive), which Stripe computes for the buyers' country and the completion records;
 * `testmode`: the checkouts go through the test gateway, paid by staff in the console;
 * `subscriptions`: one of the two checkouts is a monthly package's, the subscription started on completion.
 */
export function rushSequence(shop: Shop, variant: string): RushItem[] {
  const api = { 'x-api-key': shop.key, 'content-type': 'application/json' };
  // The key too, which the server's pages ignore: the baseline checks it on every route.
  const page = (path: string): RushItem[] => [{ kind: 'page', method: 'GET', path, headers: { ...PAGE_HEADERS, 'x-api-key': shop.key } }];
  const units: RushItem[][] = shop.tokens.map((token) => [
    { kind: 'poll', method: 'GET', path: `/api/command-logs/${token}/queue`, headers: { 'x-api-key': shop.key }, token },
    { kind: 'ack', method: 'POST', path: '/api/command-logs/validate', headers: api, token },
  ]);
  for (let i = 0; i < BUYS; i++) {
    const coupon = i % 3 === 0 ? { coupon: shop.coupon } : {};
    units.push([
      {
        kind: 'buy',
        method: 'POST',
        path: '/api/store/buy',
        headers: api,
        body: JSON.stringify({ userID: '@buyer', products: [{ id: '@product', quantity: 1 }], ...coupon }),
        buyers: shop.buyers,
        products: shop.launchIds,
        idempotent: variant === 'idempotency',
      },
    ]);
  }
  for (let i = 0; i < CHECKOUTS; i++) {
    // The subscriptions variant: the checkout without the coupon is a monthly package's.
    units.push(variant === 'subscriptions' && i % 2 === 1 ? subscription(shop, api) : checkout(shop, api, i % 2 === 0, variant));
  }
  for (let i = 0; i < 2; i++) units.push([{ kind: 'dashboard', method: 'GET', path: '/console', headers: { cookie: shop.cookie } }]);
  for (let i = 0; i < PAGES; i++) {
    if (i % 6 === 0) units.push(page('/'));
    else if (i % 2) units.push(page(`/category/${shop.categoryIds[i % shop.categoryIds.length]}`));
    else units.push(page(`/product/${shop.productIds[(i * 13) % shop.productIds.length]}`));
  }
  return shuffled(units).flat();
}

/** A checkout at Stripe and, next on the connection, Stripe's webhook that it was paid. */
function checkout(shop: Shop, api: Record<string, string>, withCoupon: boolean, variant: string): RushItem[] {
  const body = {
    gateway: variant === 'testmode' ? 'test' : 'stripe',
    userID: '@buyer',
    lines: [{ productID: '@product', quantity: 1 }],
    returnURL: 'https://play.example.com/thanks',
    cancelURL: 'https://play.example.com/basket',
    ...(withCoupon ? { coupon: shop.coupon } : {}),
  };
  const paid: RushItem =
    variant === 'testmode'
      ? {
          kind: 'complete',
          method: 'POST',
          path: '/console/payments/test-checkout/@payment/pay',
          headers: { cookie: shop.cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: `_csrf=${shop.csrf}`,
          testPay: { paid: shop.paidTest! },
        }
      : {
          kind: 'complete',
          method: 'POST',
          path: '/api/payments/webhooks/stripe',
          headers: { 'content-type': 'application/json' },
          secret: shop.stripeSecret,
          ...(variant === 'tax' ? { tax: BUYERS_TAX } : {}),
        };
  return [
    {
      kind: 'checkout',
      method: 'POST',
      path: '/api/payments/purchase',
      headers: api,
      body: JSON.stringify(body),
      buyers: shop.buyers,
      products: shop.launchIds,
    },
    paid,
  ];
}

/** The tax variant's buyers are in Germany, where Stripe Tax charges 19% VAT. */
const BUYERS_TAX = { country: 'DE', percent: 19 };

/** A monthly package's checkout at Stripe (Stripe Billing) and, next on the connection, Stripe's webhook that its first period was paid. */
function subscription(shop: Shop, api: Record<string, string>): RushItem[] {
  const body = {
    gateway: 'stripe',
    userID: '@buyer',
    productID: '@product',
    returnURL: 'https://play.example.com/thanks',
    cancelURL: 'https://play.example.com/basket',
  };
  return [
    {
      kind: 'checkout',
      method: 'POST',
      path: '/api/subscriptions/checkout',
      headers: api,
      body: JSON.stringify(body),
      subscribe: { buyers: shop.buyers, packages: shop.packageIds!, price: shop.packagePrice! },
    },
    { kind: 'complete', method: 'POST', path: '/api/payments/webhooks/stripe', headers: { 'content-type': 'application/json' }, secret: shop.stripeSecret },
  ];
}

const BUYS = 6;
const CHECKOUTS = 2;
const PAGES = 68;

/** How many of each kind one walk of the sequence holds. */
export function countKinds(items: RushItem[]): Record<RushKind, number> {
  const counts = { page: 0, buy: 0, checkout: 0, complete: 0, poll: 0, ack: 0, dashboard: 0 };
  for (const item of items) counts[item.kind]++;
  return counts;
}
