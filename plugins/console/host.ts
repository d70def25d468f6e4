/**
 * The console's host side: who is signed in, what they may open, the CSRF check on every change,
 * and rendering pages (blocks) into the layout with the menu of every section.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import { Eta } from 'eta';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {
  ConsoleAccess,
  ConsoleAttention,
  ConsoleChart,
  ConsoleHandler,
  ConsoleHost,
  ConsolePage,
  ConsolePages,
  ConsoleResult,
  ConsoleRouteOptions,
  ConsoleSection,
  ConsoleStaff,
} from '../../core/console.ts';
import { DomainError, errorStatus } from '../../core/errors.ts';
import { validationMessage } from '../../core/http/error-answers.ts';
import { strictTypeProblem } from '../../core/http/strict-types.ts';
import type { FeatureContext } from '../../core/feature-context.ts';
import type { UsersService } from '../users/contract.ts';
import { formOf, pageHeaders, pagesOnly, sameToken } from '../../core/pages.ts';
import { drawChart } from './chart.ts';
import type { ConsoleSessions, StaffSession } from './sessions.ts';

export interface ConsoleOptions {
  adminRoles: string[];
  supportRoles: string[];
  idleMinutes: number;
  signInRateLimit: { max: number; windowSeconds: number };
}

export const SESSION_COOKIE = 'console_session';
const NOTICE_COOKIE = 'console_notice';

const views = join(dirname(fileURLToPath(import.meta.url)), 'views');

/** Every console answer: no caching of staff pages, no framing, nothing loaded from elsewhere. */
const SECURITY_HEADERS = pageHeaders({ cache: 'no-store' });

interface Signed {
  staff: ConsoleStaff;
  session: StaffSession;
}

interface MenuSection {
  id: string;
  title: string;
  order: number;
  access: ConsoleAccess;
}

/** What preValidation found, for the handler. */
const consoleState = new WeakMap<FastifyRequest, { signed: Signed; form: Record<string, string> }>();

/** A native date-time picker sends `2026-12-31T23:59`; the API takes `2026-12-31 23:59:00`. */
const PICKED = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?$/;

/** A field's rule broken, in words an owner reads: the form to write it in rather than a pattern. */
function plainError(name: string, error: { keyword: string; message?: string }, schema: TSchema | undefined): string {
  if (error.keyword !== 'pattern' && error.keyword !== 'format') return `${name} ${error.message ?? 'is invalid'}`;
  const example = (schema?.examples as unknown[] | undefined)?.[0];
  if (example !== undefined) return `${name}: use the form ${String(example)}`;
  if (/\\d\{4\}-\\d\{2\}-\\d\{2\}/.test(String(schema?.pattern))) return `${name}: use the form 2026-12-31 23:59 (the date picker writes it so)`;
  return `${name} is not written in the form it takes`;
}

/**
 * A form checked as the API checks a body, through the route's own validator compiler (the app's
 * AJV and options), so the rules are the API's. Each field first on its own (`fields`, compiled
 * once per route: its strict type, then its schema), so every field's error shows at once rather
 * than the first; then the whole body. An empty field counts as not sent.
 */
function validateForm(
  request: FastifyRequest,
  schema: TSchema,
  fields: [string, TSchema][],
  form: Record<string, string>,
): {
  body?: unknown;
  invalid?: Record<string, string>;
} {
  const body: Record<string, string> = Object.fromEntries(Object.entries(form).filter(([, v]) => v !== ''));
  const invalid: Record<string, string> = {};
  const properties = (schema.properties ?? {}) as Record<string, TSchema>;
  for (const name of (schema.required ?? []) as string[]) if (body[name] === undefined) invalid[name] = `${name} is required`;
  for (const [name, one] of fields) {
    if (body[name] === undefined) continue;
    const alone = { [name]: body[name] };
    const problem = strictTypeProblem(one as never, alone, '');
    const check = problem ? undefined : request.compileValidationSchema(one, 'body');
    if (problem) invalid[name] = problem;
    else if (!check!(alone)) invalid[name] = plainError(name, check!.errors?.[0] ?? { keyword: '' }, properties[name]);
  }
  if (Object.keys(invalid).length) return { invalid };
  const problem = strictTypeProblem(schema as never, body, '');
  if (problem) return { invalid: { [problem.split(/[ .]/, 1)[0]!]: problem } };
  const validate = request.compileValidationSchema(schema, 'body');
  if (validate(body)) return { body };
  // A rule across fields (none of them alone is wrong): the API's message, on the form.
  const first = validate.errors?.[0];
  const err = Object.assign(new Error('invalid'), { validation: validate.errors ?? [], validationContext: 'body' }) as unknown as FastifyError;
  const missing = (first?.params as { missingProperty?: string } | undefined)?.missingProperty;
  return { invalid: { [missing ?? (first?.instancePath ?? '').split('/').filter(Boolean)[0] ?? '_form']: validationMessage(err) } };
}

/** Each property of a body schema as an object schema of its own, for checking fields one by one. */
function fieldSchemas(schema: TSchema | undefined): [string, TSchema][] {
  return Object.entries((schema?.properties ?? {}) as Record<string, TSchema>).map(([name, one]) => [name, Type.Object({ [name]: one })]);
}

type Tiles = () => Promise<{ label: string; value: string; href?: string }[]>;

export class Console implements ConsoleHost {
  readonly #eta = new Eta({ views, cache: true, autoEscape: true });
  readonly #sessions: ConsoleSessions;
  readonly #users: UsersService;
  readonly #opts: ConsoleOptions;
  readonly sections: MenuSection[] = [];
  readonly tiles: { section: MenuSection; tiles: Tiles }[] = [];
  readonly attention: { section: MenuSection; check: () => Promise<ConsoleAttention[]> }[] = [];
  readonly charts: { section: MenuSection; draw: () => Promise<ConsoleChart[]> }[] = [];

  constructor(sessions: ConsoleSessions, users: UsersService, opts: ConsoleOptions) {
    this.#sessions = sessions;
    this.#users = users;
    this.#opts = opts;
  }

  /** The staff level a user's roles give now, read at every request: a revoked role ends access at once. */
  async accessOf(userId: number): Promise<ConsoleAccess | undefined> {
    const slugs = new Set((await this.#users.rolesOf(userId)).map((r) => r.slug));
    if (this.#opts.adminRoles.some((s) => slugs.has(s))) return 'admin';
    if (this.#opts.supportRoles.some((s) => slugs.has(s))) return 'support';
    return undefined;
  }

  /** Cookies are read and written in the scopes the console registered @fastify/cookie in (see cookies()). */
  cookie(request: FastifyRequest, name: string): string | undefined {
    return request.cookies?.[name];
  }

  /** Console cookies: HttpOnly, SameSite=Strict, for /console only, and Secure when the request came over TLS. */
  setCookie(request: FastifyRequest, reply: FastifyReply, name: string, value: string, maxAge?: number): void {
    reply.setCookie(name, value, {
      path: '/console',
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      ...(maxAge === undefined ? {} : { maxAge }),
    });
  }

  /** The signed-in staff member, or undefined (no cookie, an ended session, no console role any more). */
  async signedIn(request: FastifyRequest): Promise<Signed | undefined> {
    const token = this.cookie(request, SESSION_COOKIE);
    if (!token) return undefined;
    const session = await this.#sessions.find(token);
    if (!session) return undefined;
    const [user, access] = await Promise.all([this.#users.findById(session.userId), this.accessOf(session.userId)]);
    if (!user || !access) return undefined;
    return { session, staff: { userId: user.id, username: user.username, access } };
  }

  static allows(staff: ConsoleStaff, access: ConsoleAccess): boolean {
    return staff.access === 'admin' || access === 'support';
  }

  menu(staff: ConsoleStaff | undefined, current: string): { href: string; title: string; current: boolean }[] {
    if (!staff) return [];
    return [
      { href: '/console', title: 'Dashboard', current: current === '' },
      ...[...this.sections]
        .sort((a, b) => a.order - b.order || a.title.localeCompare(b.title))
        .filter((s) => Console.allows(staff, s.access))
        .map((s) => ({ href: `/console/${s.id}`, title: s.title, current: current === s.id })),
    ];
  }

  /** Renders a page into the layout; the notice left by the change before is shown once. */
  send(request: FastifyRequest, reply: FastifyReply, page: ConsolePage, signed: Signed | undefined, current: string, csrf?: string): FastifyReply {
    const notice = page.notice ?? this.cookie(request, NOTICE_COOKIE);
    if (this.cookie(request, NOTICE_COOKIE) !== undefined) this.setCookie(request, reply, NOTICE_COOKIE, '', 0);
    const html = this.#eta.render('layout', {
      title: page.title,
      notice,
      staff: signed?.staff,
      menu: this.menu(signed?.staff, current),
      blocks: page.blocks.map((b, i) => (b.kind === 'chart' ? { ...b, drawn: drawChart(b, i) } : b)),
      csrf: csrf ?? signed?.session.csrfToken ?? '',
      refresh: page.refreshEvery ? { every: page.refreshEvery, url: request.url } : undefined,
    });
    return reply
      .code(page.status ?? 200)
      .headers(SECURITY_HEADERS)
      .type('text/html; charset=utf-8')
      .send(html);
  }

  redirect(request: FastifyRequest, reply: FastifyReply, to: string, notice?: string): FastifyReply {
    if (notice) this.setCookie(request, reply, NOTICE_COOKIE, notice.slice(0, 300), 60);
    return reply.headers(SECURITY_HEADERS).redirect(to, 303);
  }

  result(request: FastifyRequest, reply: FastifyReply, result: ConsoleResult, signed: Signed, current: string): FastifyReply {
    if ('redirect' in result) return this.redirect(request, reply, result.redirect, result.notice);
    if ('download' in result) {
      const { filename, type, body } = result.download;
      return reply.headers(SECURITY_HEADERS).type(type).header('content-disposition', `attachment; filename="${filename}"`).send(body);
    }
    return this.send(request, reply, result, signed, current);
  }

  /** Error pages in the console's look: a refused change, a missing row, a fault. */
  errorHandler(current: string) {
    return async (err: FastifyError | DomainError, request: FastifyRequest, reply: FastifyReply) => {
      const code = err instanceof DomainError ? err.code : err.code === 'FST_ERR_RATE_LIMIT_EXCEEDED' ? 'RATE_LIMITED' : undefined;
      const status = code
        ? (errorStatus[code] ?? 400)
        : (err as FastifyError).statusCode && (err as FastifyError).statusCode! < 500
          ? (err as FastifyError).statusCode!
          : 500;
      if (status >= 500) request.log.error({ err }, 'console page failed');
      const signed = await this.signedIn(request).catch(() => undefined);
      const text = status >= 500 ? `Something went wrong on the server (request ${request.id}). Nothing was changed.` : err.message;
      return this.send(
        request,
        reply,
        { title: status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Error', blocks: [{ kind: 'text', text }], status },
        signed,
        current,
      );
    };
  }

  /**
   * A console route: signed in, allowed, and for a change the session's CSRF token, all checked
   * before the body is validated against `body` (the API's schema and messages).
   */
  route(
    scope: FastifyInstance,
    method: 'GET' | 'POST',
    url: string,
    access: ConsoleAccess,
    current: string,
    handler: ConsoleHandler,
    { body, upload }: ConsoleRouteOptions = {},
  ): void {
    const fields = fieldSchemas(body);
    const refuse = (request: FastifyRequest, reply: FastifyReply, signed: Signed, text: string) =>
      this.send(request, reply, { title: 'Not allowed', status: 403, blocks: [{ kind: 'text', text }] }, signed, current);
    scope.route({
      method,
      url,
      config: upload ? { fileUpload: upload } : {},
      preValidation: async (request, reply) => {
        const signed = await this.signedIn(request);
        if (!signed) {
          const next = method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
          return this.redirect(request, reply, `/console/login${next}`);
        }
        const form = formOf(request.body);
        if (method === 'POST' && !sameToken(form._csrf ?? '', signed.session.csrfToken)) {
          return refuse(
            request,
            reply,
            signed,
            'This form has expired or did not come from this console (CSRF check failed). Nothing was changed; open the ' + 'page again and retry.',
          );
        }
        if (!Console.allows(signed.staff, access)) return refuse(request, reply, signed, 'Your console role does not open this page; an admin can.');
        delete form._csrf;
        for (const [name, value] of Object.entries(form)) {
          const picked = PICKED.exec(value);
          if (picked) form[name] = `${picked[1]} ${picked[2]}${picked[3] ?? ':00'}`;
        }
        request.actor = { kind: 'staff', name: signed.staff.username };
        consoleState.set(request, { signed, form });
      },
      handler: async (request, reply) => {
        const { signed, form } = consoleState.get(request)!;
        const checked = body && method === 'POST' ? validateForm(request, body, fields, form) : {};
        const result = await handler({
          params: request.params as Record<string, string>,
          query: formOf(request.query),
          form,
          upload: request.upload?.filename ? request.upload : undefined,
          staff: signed.staff,
          ...checked,
        });
        return this.result(request, reply, result, signed, current);
      },
    });
  }

  async mount(scope: FastifyInstance, _feature: string, section: ConsoleSection, ctx: FeatureContext<unknown>, own: unknown): Promise<void> {
    if (!/^[a-z][a-z0-9-]*$/.test(section.id) || ['login', 'logout', 'assets'].includes(section.id) || this.sections.some((s) => s.id === section.id)) {
      throw new Error(`Console section id "${section.id}" is taken or not a lower-case path segment.`);
    }
    const menu: MenuSection = { id: section.id, title: section.title, order: section.order, access: section.access ?? 'admin' };
    this.sections.push(menu);
    await scope.register(fastifyCookie);
    pagesOnly(scope);
    scope.setErrorHandler(this.errorHandler(section.id));
    const base = `/console/${section.id}`;
    const add =
      (method: 'GET' | 'POST') =>
      (path: string, handler: ConsoleHandler, options: ConsoleRouteOptions = {}) => {
        const access = options.access === 'admin' || menu.access === 'admin' ? 'admin' : 'support';
        this.route(scope, method, `${base}${path}`, access, section.id, handler, options);
      };
    const pages: ConsolePages = {
      base,
      get: add('GET'),
      post: add('POST'),
      dashboard: (tiles) => {
        this.tiles.push({ section: menu, tiles });
      },
      attention: (check) => {
        this.attention.push({ section: menu, check });
      },
      charts: (draw) => {
        this.charts.push({ section: menu, draw });
      },
      href: (id, path = '') => (this.sections.some((s) => s.id === id) ? `/console/${id}${path}` : undefined),
    };
    await section.pages(pages, ctx, own);
  }
}
