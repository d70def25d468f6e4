/** api.md's Auth endpoints, plus two-factor enrolment (decisions.md §3). */
import { Type } from '@sinclair/typebox';
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';
import { authPlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, now, parseClientTimestamp } from '../../core/format.ts';
import { numeric, ok, type TypeBoxProvider } from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { lookupKey } from '../users/contract.ts';
import type { DbAuthService } from './service.ts';

export interface RateLimit {
  /** Requests per window for one username and ip; 0 turns the limit off. */
  max: number;
  windowSeconds: number;
}

const tags = ['auth'];
/** An IPv6 address in full is 45 characters, the column's width. */
const ip = () => Type.String({ minLength: 1, maxLength: 45, description: "the player's IP address" });
const useragent = () => Type.String({ maxLength: 512 });
const userID = () => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'user ID' });
const code = () => numeric({ description: 'the 6-digit code of the authenticator app' });
/** A session token as sent: 32 hex digits. */
const sessionToken = () => Type.String({ examples: ['5f0c9a3e7b2d4e1f8a6c0b9d3e7f1a2c'] });

/**
 * Counts attempts per username, in the form accounts are looked up by, and the player's ip from the body, not per calling
 * server: one game server sends the logins of all its players. Runs after validation, so the body
 * is there and malformed calls are not counted.
 */
function limited(name: string, limit: RateLimit): FastifyContextConfig {
  if (limit.max === 0) return {};
  return {
    rateLimit: {
      max: limit.max,
      timeWindow: limit.windowSeconds * 1000,
      hook: 'preHandler',
      keyGenerator: (request: FastifyRequest) => {
        const body = request.body as { username: string; ip: string };
        return `${name}:${lookupKey(body.username)}|${body.ip}`;
      },
    },
  };
}

export function authRoutes(app: FastifyInstance, auth: DbAuthService, settings: SettingsService, limits: { login: RateLimit; register: RateLimit }): void {
  accountRoutes(app, auth, limits);
  sessionRoutes(app, auth, settings);
  twoFactorRoutes(app, auth);
}

/**
 * Login, registration and the joining player's check: the routes the game auth plugin calls. It
 * reads `error` into its own enum and gets the nearest code it knows.
 */
function accountRoutes(fastify: FastifyInstance, auth: DbAuthService, limits: { login: RateLimit; register: RateLimit }): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.post(
    '/api/auth/login',
    {
      config: { ...limited('login', limits.login), clientErrors: authPlugin() },
      schema: {
        tags,
        summary: 'Log in; with two-factor on, the token is pending until /api/auth/tfa/verify',
        errors: ['USER_NOT_FOUND', 'WRONG_PASSWORD', 'RATE_LIMITED'],
        body: Type.Object({ username: Type.String(), password: Type.String(), ip: ip(), useragent: useragent() }),
        response: { 200: ok({ data: Type.Object({ token: sessionToken(), isTfaRequired: Type.Boolean() }) }) },
      },
    },
    async (request) => {
      const { username, password, ...client } = request.body;
      return { status: true as const, data: await auth.login(username, password, client) };
    },
  );

  app.post(
    '/api/auth/register',
    {
      // Too many tries from one place: the nearest the plugin has is its limit on registrations.
      config: { ...limited('register', limits.register), clientErrors: authPlugin({ codes: { RATE_LIMITED: 'REGISTER_LIMIT' } }) },
      schema: {
        tags,
        summary: 'Register an account and open a session',
        errors: ['USERNAME_ALREADY_EXIST', 'EMAIL_ALREADY_EXIST', 'REGISTER_LIMIT', 'INVALID_USERNAME', 'INVALID_EMAIL', 'INVALID_PASSWORD', 'RATE_LIMITED'],
        body: Type.Object({
          username: Type.String(),
          password: Type.String(),
          email: Type.Optional(Type.String({ description: 'required unless the registrationEmailRequired setting is off' })),
          ip: ip(),
          useragent: useragent(),
        }),
        response: { 200: ok({ data: Type.Object({ token: sessionToken(), isEmailVerificationRequired: Type.Boolean() }) }) },
      },
    },
    async (request) => {
      const { username, password, email, ...client } = request.body;
      return { status: true as const, data: await auth.register({ username, password, email }, client) };
    },
  );

  app.post(
    '/api/auth/game-sessions',
    {
      config: { clientErrors: authPlugin() },
      schema: {
        tags,
        summary: 'What a joining player must do: register, log in, a two-factor code, or nothing (a live session)',
        errors: ['INVALID_USERNAME'],
        description:
          "For the game auth plugin's pre-login check. `HAS_SESSION` and `TFA_REQUIRED` carry a new token; " +
          'a session counts when it was opened from the same ip and useragent and has not expired.',
        body: Type.Object({ username: Type.String({ maxLength: 64 }), ip: ip(), useragent: useragent() }),
        response: {
          200: ok({
            data: Type.Object({
              state: Type.Union(
                ['LOGIN_REQUIRED', 'REGISTER_REQUIRED', 'HAS_SESSION', 'TFA_REQUIRED', 'EMAIL_NOT_VERIFIED', 'USERNAME_CASE_MISMATCH'].map((s) =>
                  Type.Literal(s),
                ),
              ),
              token: Type.Optional(sessionToken()),
              user: Type.Optional(Type.Object({ realname: Type.String({ examples: ['Steve'] }) })),
            }),
          }),
        },
      },
    },
    async (request) => {
      const { username, ...client } = request.body;
      const { state, token, realname } = await auth.gameSession(username, client);
      return { status: true as const, data: { state, ...(token ? { token } : {}), ...(realname ? { user: { realname } } : {}) } };
    },
  );
}

/** Sessions: one checked, one opened for a user. */
function sessionRoutes(fastify: FastifyInstance, auth: DbAuthService, settings: SettingsService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/auth/sessions/:token',
    {
      schema: {
        tags,
        summary: 'Is this a live, verified session?',
        params: Type.Object({ token: Type.String() }),
        response: { 200: ok() },
        errors: ['SESSION_NOT_FOUND'],
      },
    },
    async (request) => {
      await auth.checkSession(request.params.token);
      return { status: true as const };
    },
  );

  app.post(
    '/api/auth/sessions',
    {
      schema: {
        tags,
        summary: 'Open a session for a user',
        body: Type.Object({
          userID: userID(),
          ip: ip(),
          useragent: Type.Optional(useragent()),
          expires: Type.Optional(Type.String({ description: "`YYYY-MM-DD HH:MM:SS` in the site's time zone; default 30 days from now" })),
        }),
        response: { 201: ok({ token: sessionToken() }) },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request, reply) => {
      const { userID: id, expires, ...client } = request.body;
      let expiresAt: string | undefined;
      if (expires !== undefined && expires.trim() !== '') {
        expiresAt = parseClientTimestamp(expires.trim(), settings.get().timezone);
        if (expiresAt === undefined || expiresAt === PERMANENT)
          throw new DomainError('VALIDATION_ERROR', 'expires must be a date and time written YYYY-MM-DD HH:MM:SS');
        if (expiresAt <= now()) throw new DomainError('VALIDATION_ERROR', 'expires lies in the past');
      }
      const token = await auth.createSession(id, client, expiresAt);
      return reply.code(201).send({ status: true as const, token });
    },
  );
}

/** Two-factor: a login completed with its code, enrolment, and turning it off. */
function twoFactorRoutes(fastify: FastifyInstance, auth: DbAuthService): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.post(
    '/api/auth/tfa/verify',
    {
      // A failure other than a wrong code or an unknown token (too many wrong codes, ...) is the plugin's failed verification.
      config: { clientErrors: authPlugin({ otherwise: 'TFA_VERIFICATION_FAILED' }) },
      schema: {
        tags,
        summary: 'Complete a login with the two-factor code',
        errors: ['SESSION_NOT_FOUND', 'WRONG_CODE', 'RATE_LIMITED'],
        body: Type.Object({ token: Type.String(), code: code() }),
        response: { 200: ok() },
      },
    },
    async (request) => {
      await auth.verifyTfa(request.body.token, String(request.body.code));
      return { status: true as const };
    },
  );

  app.post(
    '/api/auth/tfa/setup',
    {
      schema: {
        tags,
        summary: 'Start two-factor enrolment: a new secret and its otpauth:// URL (for a QR code)',
        body: Type.Object({ userID: userID() }),
        errors: ['USER_NOT_FOUND'],
        response: {
          200: ok({
            data: Type.Object({
              secret: Type.String({ examples: ['JBSWY3DPEHPK3PXP'] }),
              otpauthUrl: Type.String({ examples: ['otpauth://totp/Community:Steve?secret=JBSWY3DPEHPK3PXP&issuer=Community'] }),
            }),
          }),
        },
      },
    },
    async (request) => ({ status: true as const, data: await auth.setupTfa(request.body.userID) }),
  );

  app.post(
    '/api/auth/tfa/enable',
    {
      schema: {
        tags,
        summary: 'Finish enrolment with a code of the new secret: authStatus becomes "1"',
        body: Type.Object({ userID: userID(), code: code() }),
        response: { 200: ok() },
        errors: ['USER_NOT_FOUND', 'WRONG_CODE', 'RATE_LIMITED'],
      },
    },
    async (request) => {
      await auth.enableTfa(request.body.userID, String(request.body.code));
      return { status: true as const };
    },
  );

  app.post(
    '/api/auth/tfa/disable',
    {
      schema: {
        tags,
        summary: 'Turn two-factor off with a code of the active secret: authStatus becomes "0"',
        body: Type.Object({ userID: userID(), code: code() }),
        response: { 200: ok() },
        errors: ['USER_NOT_FOUND', 'WRONG_CODE', 'RATE_LIMITED'],
      },
    },
    async (request) => {
      await auth.disableTfa(request.body.userID, String(request.body.code));
      return { status: true as const };
    },
  );

  app.post(
    '/api/admin/auth/tfa/disable',
    {
      schema: {
        tags,
        summary: 'Turn a user\'s two-factor off without a code (a lost authenticator): authStatus becomes "0"',
        body: Type.Object({ userID: userID() }),
        response: { 200: ok() },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      await auth.disableTfa(request.body.userID);
      return { status: true as const };
    },
  );
}
