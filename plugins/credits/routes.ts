/** api.md's Credits endpoints (decisions.md §6), plus the ledger history. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney, moneyNumber, requireMoney } from '../../core/format.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { UserAccount, UsersService } from '../users/contract.ts';
import {
  BalanceResponse,
  ChangeBody,
  ChangeResponse,
  HistoryQuery,
  LedgerRow,
  SendAliasBody,
  SendBody,
  SendResponse,
  SetBody,
  SetParams,
  UserParams,
  UserQuery,
} from './schemas.ts';
import type { DbCreditsService } from './service.ts';

const tags = ['credits'];

/** An API amount in cents: INVALID_AMOUNT unless a decimal with at most two places and at least `min` cents. */
function amountOf(value: string | number, min: number): number {
  const cents = requireMoney(value);
  if (cents < min) throw new DomainError('INVALID_AMOUNT', `amount must be at least ${formatMoney(min)}`);
  return cents;
}

const present = (value: string | undefined): value is string => value !== undefined && value !== '';

/** The domain errors of each change (listed in the OpenAPI document). */
const CHANGE_ERRORS = { add: ['USER_NOT_FOUND', 'INVALID_AMOUNT'], remove: ['USER_NOT_FOUND', 'INVALID_AMOUNT', 'NOT_ENOUGH_CREDITS'] };
const SEND_ERRORS = ['USER_NOT_FOUND', 'TARGET_USER_NOT_FOUND', 'INVALID_TARGET', 'INVALID_AMOUNT', 'NOT_ENOUGH_CREDITS'];

/** What each group of routes works with. */
interface CreditsRoutes {
  fastify: FastifyInstance;
  credits: DbCreditsService;
  users: UsersService;
  settings: SettingsService;
}

export async function creditsRoutes(fastify: FastifyInstance, credits: DbCreditsService, users: UsersService, settings: SettingsService): Promise<void> {
  const routes: CreditsRoutes = { fastify, credits, users, settings };
  // The game plugin calls show, add, remove, send and set, and reads `error` into its enum (docs/clients.md).
  balanceRoutes(routes);
  changeRoutes(routes);
  sendRoutes(routes);
  setRoutes(routes);
  historyRoute(routes);
}

/** `"12.50 USD"` and `12.5`, in the currency of the site settings. */
const shown = (cents: number, currency: string) => ({ text: `${formatMoney(cents)} ${currency}`, raw: moneyNumber(cents) });

/** The answer to a change of a balance: the balance now. */
function changed(settings: SettingsService, balance: number) {
  const { currency } = settings.get();
  const { text, raw } = shown(balance, currency);
  return { status: true as const, current_credits: text, current_raw_credits: raw, currency };
}

async function queriedUser(users: UsersService, query: { username?: string; id?: string }): Promise<UserAccount> {
  const { username, id } = query;
  if (present(username) === present(id)) throw new DomainError('VALIDATION_ERROR', 'Give exactly one of the query parameters username and id.');
  if (present(username)) return users.requireByUsername(username);
  if (!/^[0-9]+$/.test(id!)) throw new DomainError('VALIDATION_ERROR', 'id must be a user ID (digits only).');
  return users.requireById(Number(id));
}

/** A user's balance, by query or by the older path form. */
function balanceRoutes({ fastify, credits, users, settings }: CreditsRoutes): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const balanceOf = async (user: UserAccount) => {
    const { currency } = settings.get();
    const { text, raw } = shown(await credits.balance(user.id), currency);
    return { status: true as const, credits: text, raw_credits: raw, currency };
  };
  app.get(
    '/api/credits',
    {
      config: { clientErrors: gamePlugin() },
      schema: {
        tags,
        summary: "A user's balance, by username or by id",
        querystring: UserQuery,
        response: { 200: BalanceResponse },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => balanceOf(await queriedUser(users, request.query)),
  );
  // The older path form (still called by the Kotlin wrapper): the path names the user, by ID or by username.
  app.get(
    '/api/credits/:user',
    {
      schema: {
        tags,
        summary: "A user's balance; `<user>` is a user ID or a username (the older path form of GET /api/credits)",
        params: UserParams,
        response: { 200: BalanceResponse },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => balanceOf(await users.requireByIdOrUsername(request.params.user)),
  );
}

/** Credits added to or taken from a balance, and their older path forms. */
function changeRoutes({ fastify, credits, users, settings }: CreditsRoutes): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const change = (action: 'add' | 'remove', sign: 1 | -1) => async (username: string, amount: string | number, keyName: string | undefined) => {
    const cents = amountOf(amount, 1);
    const user = await users.requireByUsername(username);
    return changed(settings, await credits.change(user.id, sign * cents, { reason: action, keyName }));
  };
  for (const [action, sign, summary] of [
    ['add', 1, 'Add credits to a balance'],
    ['remove', -1, 'Take credits from a balance'],
  ] as const) {
    const run = change(action, sign);
    app.post(
      `/api/credits/${action}`,
      {
        config: { idempotent: 'transaction', clientErrors: gamePlugin({ fields: { amount: 'INVALID_AMOUNT' } }) },
        schema: { tags, summary, body: ChangeBody, response: { 200: ChangeResponse }, errors: CHANGE_ERRORS[action] },
      },
      (request) => run(request.body.target_username, request.body.amount, request.apiKey?.name),
    );
    app.post(
      `/api/credits/:user/${action}`,
      {
        config: { idempotent: 'transaction' },
        schema: {
          tags,
          summary: `${summary}; \`<user>\` names the target when the body has no target_username (the older path form)`,
          params: SetParams,
          body: SetBody,
          response: { 200: ChangeResponse },
          errors: CHANGE_ERRORS[action],
        },
      },
      async (request) => {
        const { target_username: named, amount } = request.body;
        return run(present(named) ? named : request.params.user, amount, request.apiKey?.name);
      },
    );
  }
}

/** Credits moved from one user to another, and the older path form. */
function sendRoutes({ fastify, credits, users, settings }: CreditsRoutes): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const send = async (senderName: string, targetName: string, amount: string | number, keyName: string | undefined) => {
    const cents = amountOf(amount, 1);
    // Both users in one read; the sender's absence is reported first.
    const [sender, target] = await users.idsByUsername([senderName, targetName]);
    if (sender === undefined) throw new DomainError('USER_NOT_FOUND', `No user named "${senderName}".`);
    if (target === undefined) throw new DomainError('TARGET_USER_NOT_FOUND', `No user named "${targetName}".`);
    const { from, to } = await credits.send(sender, target, cents, { keyName });
    const { currency } = settings.get();
    const mine = shown(from, currency);
    const theirs = shown(to, currency);
    return {
      status: true as const,
      current_credits: mine.text,
      current_raw_credits: mine.raw,
      target_current_credits: theirs.text,
      target_current_raw_credits: theirs.raw,
      currency,
    };
  };
  app.post(
    '/api/credits/send',
    {
      config: { idempotent: 'transaction', clientErrors: gamePlugin({ fields: { amount: 'INVALID_AMOUNT', target_username: 'TARGET_USER_NOT_FOUND' } }) },
      schema: { tags, summary: 'Move credits from one user to another', body: SendBody, response: { 200: SendResponse }, errors: SEND_ERRORS },
    },
    (request) => send(request.body.sender_username, request.body.target_username, request.body.amount, request.apiKey?.name),
  );
  app.post(
    '/api/credits/:user/send',
    {
      config: { idempotent: 'transaction' },
      schema: {
        tags,
        summary: 'Move credits from `<user>` (unless the body names a sender_username) to another user (the older path form)',
        params: SetParams,
        body: SendAliasBody,
        response: { 200: SendResponse },
        errors: SEND_ERRORS,
      },
    },
    async (request) => {
      const { sender_username: named, target_username: target, amount } = request.body;
      return send(present(named) ? named : request.params.user, target, amount, request.apiKey?.name);
    },
  );
}

/** A balance set outright, and the older path form. */
function setRoutes({ fastify, credits, users, settings }: CreditsRoutes): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const set = async (username: string | undefined, amount: string | number, keyName: string | undefined) => {
    if (!present(username)) throw new DomainError('VALIDATION_ERROR', 'target_username is required');
    const cents = amountOf(amount, 0);
    const user = await users.requireByUsername(username);
    return changed(settings, await credits.set(user.id, cents, { reason: 'set', keyName }));
  };
  const setSchema = { tags, body: SetBody, response: { 200: ChangeResponse } };
  app.post(
    '/api/credits/set',
    {
      config: { idempotent: 'transaction', clientErrors: gamePlugin({ fields: { amount: 'INVALID_AMOUNT' } }) },
      schema: { ...setSchema, summary: 'Set a balance', errors: ['USER_NOT_FOUND', 'INVALID_AMOUNT'] },
    },
    (request) => set(request.body.target_username, request.body.amount, request.apiKey?.name),
  );
  app.post(
    '/api/credits/:user/set',
    {
      config: { idempotent: 'transaction' },
      schema: {
        ...setSchema,
        params: SetParams,
        summary: 'Set a balance; `<user>` names the target when the body has no target_username',
        errors: ['USER_NOT_FOUND', 'INVALID_AMOUNT'],
      },
    },
    async (request) => {
      const { target_username: named, amount } = request.body;
      return set(present(named) ? named : request.params.user, amount, request.apiKey?.name);
    },
  );
}

/** A user's ledger. */
function historyRoute({ fastify, credits, users, settings }: CreditsRoutes): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    '/api/credits/history',
    {
      schema: {
        tags,
        summary: "A user's ledger, newest first (page with `before`)",
        querystring: HistoryQuery,
        response: { 200: Type.Array(LedgerRow) },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async (request) => {
      const user = await queriedUser(users, request.query);
      const entries = await credits.history(user.id, { limit: request.query.limit, before: request.query.before });
      const { timezone } = settings.get();
      return entries.map((e) => ({
        id: String(e.id),
        userID: String(e.userId),
        delta: formatMoney(e.delta),
        balance: formatMoney(e.balance),
        reason: e.reason,
        keyName: e.keyName,
        orderID: e.orderId === null ? null : String(e.orderId),
        transferID: e.transferId,
        creationDate: displayTimestamp(e.createdAt, timezone),
      }));
    },
  );
}
