/**
 * The storefront's page host: the theme (templates and stylesheet, each overridable from the
 * theme folder), the player's language, session and CSRF cookies, and rendering a page into the
 * layout with the site's title, logo, colours and footer links.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { overrideFolder } from '../../core/config.ts';
import { displayTimestamp, now } from '../../core/format.ts';
import { newToken, pageHeaders, sameToken } from '../../core/pages.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { AuthService } from '../auth/contract.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import { BASKET_COOKIE, readBasket, type BasketLine } from './basket.ts';
import { pickLanguage, translator, type Language, type Translate } from './messages.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const SESSION_COOKIE = 'storefront_session';
const CSRF_COOKIE = 'storefront_csrf';
const NOTICE_COOKIE = 'storefront_notice';
/** The language a player picked with the switch; it wins over the browser's Accept-Language. */
const LANG_COOKIE = 'storefront_lang';
/** Each language by its own name, as a switch shows it. */
const LANGUAGE_NAMES: Record<Language, string> = { en: 'English', de: 'Deutsch' };
const isLanguage = (text: unknown): text is Language => typeof text === 'string' && Object.hasOwn(LANGUAGE_NAMES, text);
/** Amounts kept formatted per language and currency. */
const MONEY_CACHE = 5000;

/** A theme: the default templates and stylesheet, each replaced by a file of the same name in `themeDir`. */
export class Theme {
  readonly #eta = new Eta({ autoEscape: true, cache: true });
  readonly stylesheet: Buffer;

  constructor(themeDir: string) {
    const pick = overrideFolder('plugins.storefront.themeDir', themeDir);
    for (const file of readdirSync(join(here, 'views')).filter((f) => f.endsWith('.eta'))) {
      this.#eta.loadTemplate(`@${basename(file, '.eta')}`, readFileSync(pick(file, join(here, 'views', file)), 'utf8'));
    }
    this.stylesheet = readFileSync(pick('storefront.css', join(here, 'assets/storefront.css')));
  }

  render(name: string, data: object): string {
    return this.#eta.render(`@${name}`, data);
  }
}

export interface Player {
  user: UserAccount;
  token: string;
}

/** What a page hands to its template besides its own data. */
export interface PageMeta {
  title: string;
  description?: string;
  /** The page's path under the prefix, for its canonical link; none for pages search engines should skip. */
  canonical?: string;
  status?: number;
  notice?: string;
  alert?: string;
}

/** Per request: who, which language, how to write money and dates. */
export interface Visit {
  request: FastifyRequest;
  reply: FastifyReply;
  lang: Language;
  t: Translate;
  player?: Player;
  csrf: string;
  basket: BasketLine[];
  /** The visit's time: what prices and discounts are judged at. */
  at: string;
  money(cents: number): string;
  date(ts: string): string;
}

export interface SiteOptions {
  prefix: string;
  publicUrl: string;
  basketMaxLines: number;
  imageBaseUrl: string;
}

interface FooterLink {
  label: string;
  href: string;
}

/** `Label=address | Label=address` from the footer links setting; anything else in it is skipped. */
export function footerLinks(text: string): FooterLink[] {
  return text
    .split('|')
    .map((part) => {
      const at = part.indexOf('=');
      const label = part.slice(0, at).trim();
      const href = part.slice(at + 1).trim();
      return { label, href };
    })
    .filter((l) => l.label && /^(https?:\/\/\S+|\/\S*)$/i.test(l.href));
}

export class Site {
  readonly theme: Theme;
  readonly #settings: SettingsService;
  readonly #auth: AuthService;
  readonly #users: UsersService;
  readonly #opts: SiteOptions;
  /** The prefix without its trailing slash: '' at the root. */
  readonly base: string;
  readonly #money = new Map<string, (cents: number) => string>();
  #footer?: { text: string; links: FooterLink[] };
  #headers?: { images: string; headers: Record<string, string> };
  #themeCss?: { key: string; body: string; version: string };

  constructor(theme: Theme, settings: SettingsService, auth: AuthService, users: UsersService, opts: SiteOptions) {
    this.theme = theme;
    this.#settings = settings;
    this.#auth = auth;
    this.#users = users;
    this.#opts = opts;
    this.base = opts.prefix === '/' ? '' : opts.prefix.replace(/\/$/, '');
  }

  settings(): ReturnType<SettingsService['get']> {
    return this.#settings.get();
  }

  /** A path of the storefront: '/' is its home. */
  u = (path: string): string => (path === '/' ? this.base || '/' : `${this.base}${path}`);

  /** Cookies for the storefront's paths only: HttpOnly, SameSite=Lax (a gateway's redirect back keeps the player signed in), Secure over TLS. */
  setCookie(request: FastifyRequest, reply: FastifyReply, name: string, value: string, maxAge?: number): void {
    reply.setCookie(name, value, {
      path: this.base || '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      ...(maxAge === undefined ? {} : { maxAge }),
    });
  }

  async player(request: FastifyRequest): Promise<Player | undefined> {
    const token = request.cookies[SESSION_COOKIE];
    if (!token || !/^[0-9a-f]{32}$/.test(token)) return undefined;
    const userId = await this.#auth.sessionUser(token);
    const user = userId === undefined ? undefined : await this.#users.findById(userId);
    return user ? { user, token } : undefined;
  }

  /** The visit of a request: its language from Accept-Language (the setting's default otherwise), its player, its CSRF token. */
  async visit(request: FastifyRequest, reply: FastifyReply): Promise<Visit> {
    const settings = this.#settings.get();
    const asked = (request.query as { lang?: unknown } | undefined)?.lang;
    if (isLanguage(asked) && request.cookies[LANG_COOKIE] !== asked) this.setCookie(request, reply, LANG_COOKIE, asked, 365 * 86400);
    const kept = request.cookies[LANG_COOKIE];
    const lang = isLanguage(asked) ? asked : isLanguage(kept) ? kept : pickLanguage(request.headers['accept-language'], settings.storefrontLanguage);
    let csrf = request.cookies[CSRF_COOKIE];
    if (!csrf || !/^[0-9a-f]{64}$/.test(csrf)) {
      csrf = newToken();
      this.setCookie(request, reply, CSRF_COOKIE, csrf);
    }
    return {
      request,
      reply,
      lang,
      t: translator(lang),
      csrf,
      player: request.cookies[SESSION_COOKIE] ? await this.player(request) : undefined,
      at: now(),
      basket: readBasket(request.cookies[BASKET_COOKIE], this.#opts.basketMaxLines),
      money: this.#moneyFormat(lang, settings.currency),
      date: (ts) => displayTimestamp(ts, settings.timezone).slice(0, 16),
    };
  }

  /**
   * Money in the player's language and the site's currency, each amount formatted once: Intl's
   * formatting is the dearest step of a page of prices, and a catalogue has few distinct prices.
   */
  #moneyFormat(lang: Language, currency: string): (cents: number) => string {
    const key = `${lang}|${currency}`;
    let format = this.#money.get(key);
    if (!format) {
      const intl = new Intl.NumberFormat(lang, { style: 'currency', currency });
      const done = new Map<number, string>();
      format = (cents) => {
        let text = done.get(cents);
        if (text === undefined) {
          if (done.size >= MONEY_CACHE) done.clear();
          done.set(cents, (text = intl.format(cents / 100)));
        }
        return text;
      };
      this.#money.set(key, format);
    }
    return format;
  }

  /** Whether a posted form carries the visit's CSRF token. */
  checkCsrf(visit: Visit, form: Record<string, string>): boolean {
    return sameToken(form._csrf ?? '', visit.csrf) && visit.request.cookies[CSRF_COOKIE] === visit.csrf;
  }

  /** The colours of the site settings as a stylesheet (no inline style under the CSP); its version changes with them. */
  themeCss(): { body: string; version: string } {
    const s = this.#settings.get();
    const key = `${s.storefrontAccent}|${s.storefrontAccentText}`;
    if (this.#themeCss?.key !== key) {
      this.#themeCss = {
        key,
        body: `:root { --accent: ${s.storefrontAccent}; --accent-fg: ${s.storefrontAccentText}; }\n`,
        version: Buffer.from(key).toString('base64url'),
      };
    }
    return this.#themeCss;
  }

  canonical(request: FastifyRequest, path: string): string {
    const origin = this.#opts.publicUrl.replace(/\/$/, '') || `${request.protocol}://${request.host}`;
    return `${origin}${this.u(path)}`;
  }

  /** Renders a page into the layout; a notice left by the change before is shown once. */
  page(visit: Visit, template: string, meta: PageMeta, data: object): FastifyReply {
    const { request, reply } = visit;
    const s = this.#settings.get();
    const stored = request.cookies[NOTICE_COOKIE];
    if (stored !== undefined) this.setCookie(request, reply, NOTICE_COOKIE, '', 0);
    const common = {
      lang: visit.lang,
      t: visit.t,
      u: this.u,
      csrf: visit.csrf,
      user: visit.player?.user,
      site: { title: s.storefrontTitle, logo: s.storefrontLogo, links: this.#footerLinks(s.storefrontFooterLinks), currency: s.currency },
      languages: this.#languageLinks(visit),
    };
    const body = this.theme.render(template, { ...common, ...data });
    const html = this.theme.render('layout', {
      ...common,
      ...data,
      body,
      title: meta.title,
      description: meta.description,
      noindex: meta.canonical === undefined,
      canonical: meta.canonical === undefined ? undefined : this.canonical(request, meta.canonical),
      notice: meta.notice ?? (stored ? stored.slice(0, 300) : undefined),
      alert: meta.alert,
      basketCount: visit.basket.reduce((n, l) => n + l.quantity, 0),
      themeVersion: this.themeCss().version,
    });
    return reply
      .code(meta.status ?? 200)
      .headers(this.#pageHeaders(s.storefrontLogo))
      .type('text/html; charset=utf-8')
      .send(html);
  }

  /** The language switch: this page again in each language (a form's answer links to the home page). */
  #languageLinks(visit: Visit): { code: Language; name: string; href: string; current: boolean }[] {
    const path = visit.request.method === 'GET' ? visit.request.url.split('?')[0]! : this.u('/');
    return (Object.keys(LANGUAGE_NAMES) as Language[]).map((code) => ({
      code,
      name: LANGUAGE_NAMES[code],
      href: `${path}?lang=${code}`,
      current: code === visit.lang,
    }));
  }

  #footerLinks(text: string): FooterLink[] {
    if (this.#footer?.text !== text) this.#footer = { text, links: footerLinks(text) };
    return this.#footer.links;
  }

  /** A page's headers; the logo's and the images' hosts may be shown. */
  #pageHeaders(logo: string): Record<string, string> {
    const images = [logo, this.#opts.imageBaseUrl]
      .map((url) => /^https:\/\/[^/]+/.exec(url)?.[0])
      .filter(Boolean)
      .join(' ');
    if (this.#headers?.images !== images) {
      this.#headers = { images, headers: { ...pageHeaders({ cache: 'private, no-cache', images }), vary: 'Accept-Language, Cookie' } };
    }
    return this.#headers.headers;
  }

  redirect(visit: Visit, to: string, notice?: string): FastifyReply {
    if (notice) this.setCookie(visit.request, visit.reply, NOTICE_COOKIE, notice.slice(0, 300), 60);
    return visit.reply.headers(pageHeaders({ cache: 'no-store' })).redirect(to, 303);
  }

  /** A page with one heading and a sentence: not found, not allowed, an error. */
  message(visit: Visit, status: number, heading: string, text: string): FastifyReply {
    return this.page(visit, 'message', { title: heading, status }, { heading, text });
  }
}
