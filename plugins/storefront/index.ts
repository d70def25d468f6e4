import { createRequire } from 'node:module';
import fastifyCookie from '@fastify/cookie';
import { Type } from '@sinclair/typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, errorStatus } from '../../core/errors.ts';
import { defineFeature } from '../../core/features.ts';
import { pagesOnly } from '../../core/pages.ts';
import { readFileSync } from 'node:fs';
import { authRef } from '../auth/contract.ts';
import { creditsRef } from '../credits/contract.ts';
import { deliveryRef } from '../delivery/contract.ts';
import { paymentsRef } from '../payments/contract.ts';
import { donationsRef } from '../donations/contract.ts';
import { emailRef } from '../email/contract.ts';
import { storeRef, storedImage, type ShownProduct, type StoreService } from '../store/contract.ts';
import { supportRef } from '../support/contract.ts';
import { subscriptionsRef } from '../subscriptions/contract.ts';
import { usersRef } from '../users/contract.ts';
import { votesRef } from '../votes/contract.ts';
import { promotionsRef } from '../promotions/contract.ts';
import { accountRoutes } from './account.ts';
import { allProducts, Catalogue } from './catalogue.ts';
import { storefrontRef, storefrontSettings } from './contract.ts';
import { paymentRoutes, Payments } from './payments.ts';
import { recoveryRoutes } from './recovery.ts';
import { pageRouter } from './router.ts';
import { catalogueRoutes } from './routes.ts';
import { ServerStatusCache } from './server-status.ts';
import { subscribeRoutes } from './subscribe.ts';
import { Site, Theme, type Visit } from './site.ts';

const limit = (max: number, windowSeconds: number) =>
  Type.Object(
    {
      max: Type.Integer({ minimum: 1, default: max }),
      windowSeconds: Type.Integer({ minimum: 1, default: windowSeconds }),
    },
    { default: {} },
  );

const options = Type.Object({
  /** Where the storefront lives: `/` (the site's home) or a path such as `/shop`. */
  prefix: Type.String({ pattern: '^/([a-z0-9-]+(/[a-z0-9-]+)*)?$', default: '/' }),
  /** A folder whose templates (`<name>.eta`) and `storefront.css` replace the default theme's. Relative to the install. */
  themeDir: Type.String({ default: '' }),
  /** The address players reach the site at (`https://shop.example.org`), for canonical links and the sitemap; empty: the request's host. */
  publicUrl: Type.String({ pattern: '^(|https?://[^/\\s]+)$', default: '' }),
  /** Where product images are (`https://cdn.example.org/store/`): an image is `<imageBaseUrl><imageID>.<imageType>`;
   * empty shows the images uploaded in the console, served by the store. */
  imageBaseUrl: Type.String({ pattern: '^(|https://\\S+/|/\\S*/)$', default: '' }),
  /** Lines a basket may hold. */
  basketMaxLines: Type.Integer({ minimum: 1, maximum: 50, default: 20 }),
  /** Shortest search text. */
  searchMinLength: Type.Integer({ minimum: 1, default: 2 }),
  /** The game server's list ping (its address is the site setting storefrontServerAddress): kept this long, given up after timeoutMs. */
  serverStatus: Type.Object(
    {
      cacheSeconds: Type.Integer({ minimum: 1, default: 30 }),
      timeoutMs: Type.Integer({ minimum: 100, maximum: 10000, default: 1500 }),
    },
    { default: {} },
  ),
  /** How often a waiting order's page asks for its delivery. */
  pollSeconds: Type.Integer({ minimum: 1, default: 3 }),
  /** Per address. */
  rateLimit: Type.Object({ signIn: limit(10, 60), register: limit(5, 3600), checkout: limit(20, 60), mailLink: limit(5, 3600) }, { default: {} }),
});

const require = createRequire(import.meta.url);
const HTMX = readFileSync(require.resolve('htmx.org/dist/htmx.min.js'));

const xml = (text: string) => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

export default defineFeature({
  name: 'storefront',
  requires: [storeRef, usersRef, authRef],
  options,
  settings: storefrontSettings,
  async register(app, { services, settings, options: opts, log }) {
    const store = services.get(storeRef);
    const users = services.get(usersRef);
    const auth = services.get(authRef);
    const theme = new Theme(opts.themeDir);
    const site = new Site(theme, settings, auth, users, {
      prefix: opts.prefix,
      publicUrl: opts.publicUrl,
      basketMaxLines: opts.basketMaxLines,
      imageBaseUrl: opts.imageBaseUrl,
    });
    const imageUrl = (p: ShownProduct) => {
      if (!opts.imageBaseUrl) return storedImage(p);
      return /^[A-Za-z0-9_-]+$/.test(p.imageId) && /^[a-z0-9]{1,8}$/.test(p.imageType) ? `${opts.imageBaseUrl}${p.imageId}.${p.imageType}` : undefined;
    };
    const catalogue = new Catalogue(imageUrl, (p, at) => store.unitPrice(p, at));
    const page = (path: string) => (opts.publicUrl ? `${opts.publicUrl}${site.u(path)}` : undefined);
    services.provide(storefrontRef, {
      orderPage: (id) => page(`/account/orders/${id}`),
      guestOrderPage: (token) => page(`/order/${token}`),
      ticketPage: (id) => page(`/account/tickets/${id}`),
      resetPasswordPage: (token) => page(`/password/reset/${token}`),
      verifyEmailPage: (token) => page(`/verify/${token}`),
    });
    const email = () => {
      const found = services.find(emailRef);
      return found?.configured ? found : undefined;
    };

    await app.register(fastifyCookie);
    pagesOnly(app);

    const pageError = async (err: FastifyError | DomainError, request: FastifyRequest, reply: FastifyReply) => {
      const code = err instanceof DomainError ? err.code : err.code === 'FST_ERR_RATE_LIMIT_EXCEEDED' ? 'RATE_LIMITED' : undefined;
      const status = code
        ? (errorStatus[code] ?? 400)
        : (err as FastifyError).statusCode && (err as FastifyError).statusCode! < 500
          ? (err as FastifyError).statusCode!
          : 500;
      if (status >= 500) request.log.error({ err }, 'storefront page failed');
      let visit: Visit;
      try {
        visit = await site.visit(request, reply);
      } catch {
        return reply
          .code(status)
          .type('text/plain; charset=utf-8')
          .send(status >= 500 ? 'Something went wrong on our side.' : err.message);
      }
      if (code === 'RATE_LIMITED') {
        // A route's own limit says when in words; a peer's (the email feature's per-account count) in seconds.
        const seconds = err instanceof DomainError ? err.retryAfterSeconds : undefined;
        const after = (err as { after?: string }).after ?? (seconds === undefined ? err.message : `${Math.max(1, Math.ceil(seconds / 60))} min`);
        return site.message(visit, 429, visit.t('error.title'), visit.t('error.rateLimited', { after }));
      }
      if (status === 404) return site.message(visit, 404, visit.t('error.notFound'), visit.t('error.notFoundText'));
      return site.message(visit, status, visit.t('error.title'), status >= 500 ? visit.t('error.server', { id: String(request.id) }) : err.message);
    };
    app.setErrorHandler(pageError);

    const asset = (name: string, type: string, body: () => string | Buffer) =>
      app.get(site.u(`/assets/${name}`), async (_request, reply) =>
        reply.header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').type(type).send(body()),
      );
    asset('storefront.css', 'text/css; charset=utf-8', () => theme.stylesheet);
    asset('theme.css', 'text/css; charset=utf-8', () => site.themeCss().body);
    asset('htmx.min.js', 'text/javascript; charset=utf-8', () => HTMX);

    crawlerRoutes(app, site, store);

    const pages = pageRouter(app, site);
    const pay = new Payments(site);
    const payments = () => services.find(paymentsRef);
    catalogueRoutes(
      pages,
      site,
      catalogue,
      {
        store,
        payments,
        pay,
        credits: () => services.find(creditsRef),
        donations: () => services.find(donationsRef),
        votes: () => services.find(votesRef),
        promotions: () => services.find(promotionsRef),
        subscriptions: () => services.find(subscriptionsRef),
        serverStatus: new ServerStatusCache(opts.serverStatus),
      },
      { basketMaxLines: opts.basketMaxLines, searchMinLength: opts.searchMinLength, checkoutLimit: opts.rateLimit.checkout },
    );
    accountRoutes(
      pages,
      site,
      {
        auth,
        users,
        store,
        payments,
        email,
        credits: () => services.find(creditsRef),
        delivery: () => services.find(deliveryRef),
        support: () => services.find(supportRef),
        subscriptions: () => services.find(subscriptionsRef),
      },
      { pollSeconds: opts.pollSeconds, signInLimit: opts.rateLimit.signIn, registerLimit: opts.rateLimit.register },
    );
    subscribeRoutes(pages, site, () => services.find(subscriptionsRef), opts.rateLimit.checkout);
    recoveryRoutes(pages, site, { auth, email }, { mailLimit: opts.rateLimit.mailLink });
    paymentRoutes(
      pages,
      site,
      pay,
      { payments, delivery: () => services.find(deliveryRef) },
      { pollSeconds: opts.pollSeconds, checkoutLimit: opts.rateLimit.checkout },
    );

    // Unknown addresses under a prefix answer in the storefront's look; at the root they stay the API's JSON 404.
    if (site.base) {
      await app.register(
        async (scope) => {
          scope.setNotFoundHandler(async (request, reply) => pageError(new DomainError('NOT_FOUND', 'No such page.'), request, reply));
        },
        { prefix: site.base },
      );
    }
    log.debug({ prefix: opts.prefix, themeDir: opts.themeDir || undefined }, 'storefront ready');
  },
});

/** Search engines: the catalogue's pages; the account, basket and the API are not for them. */
function crawlerRoutes(app: FastifyInstance, site: Site, store: StoreService): void {
  app.get('/robots.txt', async (request, reply) =>
    reply
      .type('text/plain; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(
        [
          'User-agent: *',
          `Disallow: ${site.u('/account')}`,
          `Disallow: ${site.u('/basket')}`,
          `Disallow: ${site.u('/login')}`,
          `Disallow: ${site.u('/register')}`,
          `Disallow: ${site.u('/password')}`,
          `Disallow: ${site.u('/verify')}`,
          'Disallow: /api/',
          'Disallow: /console',
          `Sitemap: ${site.canonical(request, '/sitemap.xml')}`,
          '',
        ].join('\n'),
      ),
  );
  app.get(site.u('/sitemap.xml'), async (request, reply) => {
    const tree = await store.tree({ activeOnly: true });
    const categories: number[] = [];
    const walk = (nodes: typeof tree) =>
      nodes.forEach((n) => {
        categories.push(n.id);
        walk(n.subcategories);
      });
    walk(tree);
    const paths = ['/', ...categories.map((id) => `/category/${id}`), ...allProducts(tree).map((p) => `/product/${p.id}`)];
    return reply
      .type('application/xml; charset=utf-8')
      .header('cache-control', 'public, max-age=600')
      .send(
        `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ` +
          `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n` +
          `${paths.map((p) => `  <url><loc>${xml(site.canonical(request, p))}</loc></url>`).join('\n')}\n</urlset>\n`,
      );
  });
}
