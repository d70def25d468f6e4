import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { everyRound } from '../../core/background.ts';
import { consoleHostRef, field, type ConsoleAccess, type ConsolePage } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { defineFeature } from '../../core/features.ts';
import { localPath, newToken, pagesOnly, sameToken } from '../../core/pages.ts';
import { authRef, type AuthService } from '../auth/contract.ts';
import { usersRef } from '../users/contract.ts';
import { entities } from './entities.ts';
import { Console, SESSION_COOKIE } from './host.ts';
import { migrations } from './migrations/index.ts';
import { ConsoleSessions } from './sessions.ts';
import { auditSection } from './audit.ts';
import { apiKeysSection, siteSettingsSection } from './site.ts';

const roleList = (fallback: string) => Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { default: [fallback] });

const options = Type.Object({
  /** Role slugs whose holders may use every page of the console. */
  adminRoles: roleList('admin'),
  /** Role slugs whose holders may use the support desk and look players up. */
  supportRoles: roleList('support'),
  /** A session with no request for this long is signed out. */
  idleMinutes: Type.Integer({ minimum: 1, default: 30 }),
  /** Sign-in attempts per ip and window (wrong passwords also count against the account's lockout). */
  signInRateLimit: Type.Object(
    {
      max: Type.Integer({ minimum: 1, default: 10 }),
      windowSeconds: Type.Integer({ minimum: 1, default: 60 }),
    },
    { default: {} },
  ),
  /** How often sessions idle past the timeout are deleted. */
  sweepSeconds: Type.Integer({ minimum: 1, default: 600 }),
});

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
/** Served from this process, so the console works on a network with no way out. */
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'console.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(here, 'assets/console.css')) },
  'htmx.min.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')) },
};

const LOGIN_COOKIE = 'console_login';

/** Only a path of this console: a `next` parameter cannot send anyone elsewhere. */
function safeNext(next: unknown): string {
  return localPath(next, '/console') ?? '/console';
}

export default defineFeature({
  name: 'console',
  requires: [usersRef, authRef],
  options,
  entities,
  migrations,
  async register(app, { db, services, options: opts, log }) {
    const users = services.get(usersRef);
    const auth = services.get(authRef);
    const sessions = new ConsoleSessions(db, opts.idleMinutes);
    // Whoever holds one of these roles signs in here: only an admin may grant them (never a sale, never a narrower key).
    for (const slug of [...opts.adminRoles, ...opts.supportRoles]) users.markPrivileged(slug, 'opens the staff console');
    const host = new Console(sessions, users, opts);
    services.provide(consoleHostRef, host);
    await app.register(fastifyCookie);
    pagesOnly(app);
    const pageErrors = host.errorHandler('');
    app.setErrorHandler(async (err, request, reply) => {
      // Too many sign-ins: the form again, saying when to retry.
      if ((err as DomainError).code === 'RATE_LIMITED' && request.url.startsWith('/console/login')) {
        return showLogin(host, request, reply, loginPage({ username: '', next: '' }, { _form: (err as DomainError).message }, 429));
      }
      return pageErrors(err as DomainError, request, reply);
    });

    assetRoute(app);
    signInRoutes(app, host, auth, sessions, opts, log);

    host.route(app, 'GET', '/console', 'support', '', async ({ staff }) => {
      const mine = <T extends { section: { access: ConsoleAccess; order: number } }>(list: T[]) =>
        list.filter((t) => Console.allows(staff, t.section.access)).sort((a, b) => a.section.order - b.section.order);
      const [groups, checks, charts, fault] = await Promise.all([
        Promise.all(mine(host.tiles).map(async (t) => ({ heading: t.section.title, items: await t.tiles() }))),
        Promise.all(mine(host.attention).map((a) => a.check())),
        Promise.all(mine(host.charts).map((c) => c.draw())),
        db.unavailableReason(),
      ]);
      const trouble = [
        ...(fault ? [{ text: `Database: ${fault}` }] : []),
        ...checks
          .flat()
          .filter((a) => a.count > 0)
          .map((a) => ({ text: a.text, ...(a.href ? { href: a.href } : {}) })),
      ];
      return {
        title: 'Dashboard',
        blocks: [
          {
            kind: 'attention',
            heading: 'Needs attention',
            items: trouble,
            empty: 'Nothing needs attention: deliveries, payments, tickets and the database are fine.',
          },
          ...charts.flat().map((c) => ({ kind: 'chart' as const, ...c })),
          ...(groups.length
            ? groups.map((g) => ({ kind: 'stats' as const, heading: g.heading, items: g.items }))
            : [{ kind: 'text' as const, text: 'No section has figures to show yet.' }]),
        ],
      };
    });

    await notFoundPage(app, host);

    everyRound(app, log, 'console session sweep', opts.sweepSeconds * 1000, () => sessions.sweep());
  },
  console: [siteSettingsSection, apiKeysSection, auditSection],
});

/** The console's own files, served with a cache lifetime. */
function assetRoute(app: FastifyInstance): void {
  app.get('/console/assets/:file', async (request: FastifyRequest<{ Params: { file: string } }>, reply) => {
    const asset = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined;
    if (!asset) throw new DomainError('NOT_FOUND', 'No such file.');
    return reply.header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').type(asset.type).send(asset.body);
  });
}

/** The sign-in form, with the values sent back and the errors beside their fields. */
function loginPage(values: Record<string, string>, errors: Record<string, string> = {}, status = 200): ConsolePage {
  return {
    title: 'Sign in',
    status,
    blocks: [
      {
        kind: 'form',
        id: 'signin',
        title: 'Staff sign-in',
        action: `/console/login${values.next ? `?next=${encodeURIComponent(values.next)}` : ''}`,
        submit: 'Sign in',
        values,
        errors,
        fields: [
          { name: 'username', label: 'Username', required: true, autocomplete: 'username' },
          { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' },
          {
            name: 'code',
            label: 'Two-factor code',
            hint: 'Only when your account has two-factor sign-in: the 6 digits your authenticator app shows.',
            autocomplete: 'one-time-code',
            inputmode: 'numeric',
          },
        ],
      },
    ],
  };
}

/** The sign-in form carries a token matching a cookie of its own: a form posted from elsewhere cannot sign anyone in. */
function showLogin(host: Console, request: FastifyRequest, reply: FastifyReply, page: ConsolePage) {
  let token = host.cookie(request, LOGIN_COOKIE);
  if (!token || !/^[0-9a-f]{64}$/.test(token)) {
    token = newToken();
    host.setCookie(request, reply, LOGIN_COOKIE, token);
  }
  return host.send(request, reply, page, undefined, '', token);
}

/** Sign-in (password, then the two-factor code where the account has it) and sign-out. */
function signInRoutes(
  app: FastifyInstance,
  host: Console,
  auth: AuthService,
  sessions: ConsoleSessions,
  opts: Static<typeof options>,
  log: FastifyBaseLogger,
): void {
  app.get('/console/login', async (request: FastifyRequest<{ Querystring: { next?: string } }>, reply) => {
    if (await host.signedIn(request)) return host.redirect(request, reply, '/console');
    return showLogin(host, request, reply, loginPage({ next: request.query.next ?? '' }));
  });

  app.post(
    '/console/login',
    {
      config: {
        rateLimit: {
          max: opts.signInRateLimit.max,
          timeWindow: opts.signInRateLimit.windowSeconds * 1000,
          keyGenerator: (request: FastifyRequest) => `console-login:${request.ip}`,
          errorResponseBuilder: (_request: FastifyRequest, ctx: { after: string }) =>
            new DomainError('RATE_LIMITED', `Too many sign-in attempts from this address; try again in ${ctx.after}.`),
        },
      },
    },
    async (request: FastifyRequest<{ Querystring: { next?: string } }>, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const text = (name: string) => (typeof body[name] === 'string' ? field(body as Record<string, string>, name) : '');
      const values = { username: text('username'), next: request.query.next ?? '' };
      const expected = host.cookie(request, LOGIN_COOKIE);
      if (!expected || !sameToken(text('_csrf'), expected)) {
        return showLogin(host, request, reply, loginPage(values, { _form: 'The sign-in form expired; it has been renewed. Sign in again.' }, 403));
      }
      const refuse = (errors: Record<string, string>, status: number) => showLogin(host, request, reply, loginPage(values, errors, status));
      if (!values.username) return refuse({ username: 'Enter your username.' }, 422);
      if (!text('password')) return refuse({ password: 'Enter your password.' }, 422);
      let userId: number;
      try {
        const check = await auth.checkPassword(values.username, typeof body.password === 'string' ? body.password : '');
        userId = check.userId;
        if (check.codeRequired) {
          if (!text('code')) return refuse({ code: 'This account signs in with two-factor: enter the code from your authenticator app.' }, 422);
          await auth.checkCode(userId, text('code'));
        }
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        if (err.code === 'USER_NOT_FOUND' || err.code === 'WRONG_PASSWORD') return refuse({ _form: 'Wrong username or password.' }, 401);
        if (err.code === 'WRONG_CODE') return refuse({ code: err.message }, 401);
        if (err.code === 'RATE_LIMITED') return refuse({ _form: err.message }, 429);
        throw err;
      }
      const access = await host.accessOf(userId);
      if (!access) {
        log.info({ userId }, 'console sign-in refused: no console role');
        return refuse({ _form: 'This account has no console role. An admin can grant one (plugins.console.adminRoles or supportRoles).' }, 403);
      }
      const { token } = await sessions.open(userId, request.ip);
      host.setCookie(request, reply, SESSION_COOKIE, token);
      host.setCookie(request, reply, LOGIN_COOKIE, '', 0);
      log.info({ userId, access }, 'console sign-in');
      return host.redirect(request, reply, safeNext(request.query.next));
    },
  );

  app.post('/console/logout', async (request, reply) => {
    const signed = await host.signedIn(request);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (signed && typeof body._csrf === 'string' && sameToken(body._csrf, signed.session.csrfToken)) {
      await sessions.close(signed.session.id);
    } else if (signed) {
      return host.send(
        request,
        reply,
        {
          title: 'Not allowed',
          status: 403,
          blocks: [{ kind: 'text', text: 'This form did not come from this console (CSRF check failed); you are still signed in.' }],
        },
        signed,
        '',
      );
    }
    host.setCookie(request, reply, SESSION_COOKIE, '', 0);
    return host.redirect(request, reply, '/console/login', 'You are signed out.');
  });
}

/** Unknown console paths answer in the console's look, with its menu, not with the API's JSON. */
async function notFoundPage(app: FastifyInstance, host: Console): Promise<void> {
  await app.register(
    async (scope) => {
      scope.setNotFoundHandler(async (request, reply) =>
        host.send(
          request,
          reply,
          {
            title: 'Not found',
            status: 404,
            blocks: [{ kind: 'text', text: 'There is no console page at this address.' }],
          },
          await host.signedIn(request),
          '',
        ),
      );
    },
    { prefix: '/console' },
  );
}
