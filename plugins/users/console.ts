/**
 * The players section of the staff console: search by name, email or chat ID, a player's profile,
 * roles granted and revoked (with expiry), credits adjusted with a reason, and the ledger. Support
 * staff may look players up; changes are for admins. Credits are the credits feature's, reached
 * through its contract when it runs.
 */
import { Type, type Static } from '@sinclair/typebox';
import { errorsFor, type ConsolePage, type ConsoleRequest, type ConsoleSection, idOf } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney, PERMANENT, requireMoney } from '../../core/format.ts';
import { creditsRef } from '../credits/contract.ts';
import type { UserAccount } from './contract.ts';
import { parseExpiry } from './schemas.ts';
import type { DbUsersService } from './service.ts';

const PAGE = 50;

const CreditsBody = Type.Object({
  direction: Type.Union([Type.Literal('add'), Type.Literal('remove')]),
  amount: Type.String({ minLength: 1 }),
  reason: Type.String({ minLength: 1, maxLength: 32 }),
});

const GrantBody = Type.Object({
  roleID: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  expiryDate: Type.Optional(Type.String()),
});


export const playersSection: ConsoleSection<unknown, DbUsersService> = {
  id: 'players',
  title: 'Players',
  order: 30,
  access: 'support',
  pages(pages, ctx, users) {
    const { services, settings } = ctx;
    const tz = () => settings.get().timezone;

    pages.dashboard(async () => {
      const credits = services.find(creditsRef);
      return credits ? [{ label: 'credits in circulation', value: formatMoney(await credits.inCirculation()) }] : [];
    });

    pages.get('', async ({ query }) => {
      const q = (query.q ?? '').trim().slice(0, 191);
      const found = await users.searchAccounts(q, { after: query.after || undefined, limit: PAGE });
      const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams({ ...(q ? { q } : {}), ...extra })}`;
      return {
        title: 'Players',
        blocks: [
          {
            kind: 'form', id: 'player-search', title: 'Find a player', method: 'get', action: pages.base, submit: 'Search', values: { q },
            fields: [{ name: 'q', label: 'Name, email or chat ID', type: 'search', hint: 'The start of a username or email, or a whole chat user ID.' }],
          },
          {
            kind: 'table', caption: q ? `Players matching "${q}"` : 'Players by name', empty: 'No player matches.',
            columns: [{ key: 'name', label: 'Username' }, { key: 'email', label: 'Email' }, { key: 'chat', label: 'Chat ID' }, { key: 'created', label: 'Registered' }],
            rows: found.map((u) => ({
              name: { text: u.username, href: `${pages.base}/${u.id}` }, email: u.email ?? '', chat: u.linkedAccounts.chat ?? '',
              created: displayTimestamp(u.creationDate, tz()),
            })),
            next: found.length === PAGE ? link({ after: found.at(-1)!.username }) : undefined,
            first: query.after ? link({}) : undefined,
          },
        ],
      };
    });

    type Forms = { credits?: { values: Record<string, string>; errors: Record<string, string> }; grant?: { values: Record<string, string>; errors: Record<string, string> } };

    const profile = async (user: UserAccount, request: Pick<ConsoleRequest, 'query' | 'staff'>, forms: Forms = {}): Promise<ConsolePage> => {
      const credits = services.find(creditsRef);
      const admin = request.staff.access === 'admin';
      const before = idOf(request.query.before) || undefined;
      const [held, roles, balance, ledger] = await Promise.all([
        users.rolesOf(user.id), admin ? users.listRoles() : [],
        credits?.balance(user.id), credits?.history(user.id, { limit: PAGE, before }),
      ]);
      const ledgerLink = (extra: Record<string, string>) => `${pages.base}/${user.id}?${new URLSearchParams(extra)}`;
      // The orders section is for admins; the support desk for both.
      const tickets = pages.href('support', `?${new URLSearchParams({ player: String(user.id) })}`);
      const orders = admin ? pages.href('orders', `?${new URLSearchParams({ username: user.username })}`) : undefined;
      const elsewhere = [
        ...(tickets ? [{ label: `Tickets of ${user.username}`, href: tickets }] : []),
        ...(orders ? [{ label: `Orders of ${user.username}`, href: orders }] : []),
      ];
      return {
        title: user.username, status: forms.credits || forms.grant ? 422 : 200,
        blocks: [
          ...(elsewhere.length ? [{ kind: 'links' as const, items: elsewhere }] : []),
          {
            kind: 'stats', items: [
              { label: 'email', value: user.email ?? 'none' }, { label: 'chat ID', value: user.linkedAccounts.chat ?? 'not linked' },
              { label: 'two-factor', value: user.authStatus === 1 ? 'on' : 'off' }, { label: 'registered', value: displayTimestamp(user.creationDate, tz()) },
              ...(balance === undefined ? [] : [{ label: 'credits', value: formatMoney(balance) }]),
            ],
          },
          {
            kind: 'table', caption: 'Roles held', empty: 'No role.',
            columns: [{ key: 'name', label: 'Role' }, { key: 'expiry', label: 'Expires' }, ...(admin ? [{ key: 'revoke', label: 'Revoke' }] : [])],
            rows: held.map((r) => ({
              name: r.name, expiry: r.expiryDate === PERMANENT ? 'never' : displayTimestamp(r.expiryDate, tz()),
              ...(admin ? { revoke: { action: `${pages.base}/${user.id}/roles/${r.id}/revoke`, label: `Revoke ${r.name}`, confirm: `Take the role ${r.name} from ${user.username}?` } } : {}),
            })),
          },
          ...(admin ? [{
            kind: 'form' as const, id: 'grant-role', title: 'Grant a role', action: `${pages.base}/${user.id}/roles`, submit: 'Grant role',
            values: forms.grant?.values ?? {}, errors: forms.grant?.errors,
            fields: [
              { name: 'roleID', label: 'Role', type: 'select' as const, required: true, options: roles.map((r) => ({ value: String(r.id), label: r.name })) },
              { name: 'expiryDate', label: 'Expires', type: 'datetime' as const, hint: `Site time (${tz()}); empty = never. Granting a held role sets its expiry.` },
            ],
          }] : []),
          ...(admin && credits ? [{
            kind: 'form' as const, id: 'adjust-credits', title: 'Adjust credits', action: `${pages.base}/${user.id}/credits`, submit: 'Adjust credits',
            values: forms.credits?.values ?? { direction: 'add' }, errors: forms.credits?.errors,
            fields: [
              { name: 'direction', label: 'Change', type: 'select' as const, options: [{ value: 'add', label: 'add' }, { value: 'remove', label: 'remove' }] },
              { name: 'amount', label: 'Amount', type: 'number' as const, required: true, hint: 'e.g. 2.50' },
              { name: 'reason', label: 'Reason', required: true, hint: 'Kept in the ledger; at most 32 characters.' },
            ],
          }] : []),
          ...(ledger ? [{
            kind: 'table' as const, caption: 'Ledger, newest first', empty: 'No credit movement.',
            columns: [{ key: 'date', label: 'Date' }, { key: 'delta', label: 'Change', numeric: true }, { key: 'balance', label: 'Balance', numeric: true }, { key: 'reason', label: 'Reason' }, { key: 'by', label: 'By' }, { key: 'order', label: 'Order' }],
            rows: ledger.map((e) => ({
              date: displayTimestamp(e.createdAt, tz()), delta: `${e.delta > 0 ? '+' : '-'}${formatMoney(Math.abs(e.delta))}`, balance: formatMoney(e.balance),
              reason: e.reason, by: e.keyName ?? '', order: e.orderId === null ? '' : `#${e.orderId}`,
            })),
            next: ledger.length === PAGE ? ledgerLink({ before: String(ledger.at(-1)!.id) }) : undefined,
            first: before !== undefined ? ledgerLink({}) : undefined,
          }] : []),
        ],
      };
    };

    pages.get('/:id', async (request) => profile(await users.requireById(idOf(request.params.id)), request));

    pages.post('/:id/credits', async (request) => {
      const { params, body, invalid, form, staff } = request;
      const user = await users.requireById(idOf(params.id));
      const credits = services.find(creditsRef);
      if (!credits) throw new DomainError('NOT_FOUND', 'The credits feature is not running.');
      const shown = { ...request, query: {} };
      if (invalid) return profile(user, shown, { credits: { values: form, errors: invalid } });
      const b = body as Static<typeof CreditsBody>;
      try {
        const cents = requireMoney(b.amount, 'INVALID_AMOUNT', 'amount');
        if (cents <= 0) throw new DomainError('INVALID_AMOUNT', 'amount must be at least 0.01');
        const after = await credits.change(user.id, b.direction === 'add' ? cents : -cents, { reason: b.reason, keyName: `console:${staff.username}` });
        return { redirect: `${pages.base}/${user.id}`, notice: `${b.direction === 'add' ? 'Added' : 'Removed'} ${formatMoney(cents)}: ${user.username} now has ${formatMoney(after)}.` };
      } catch (err) {
        return profile(user, shown, { credits: { values: form, errors: errorsFor(err, ['amount', 'reason'], { NOT_ENOUGH_CREDITS: 'amount' }) } });
      }
    }, { access: 'admin', body: CreditsBody });

    pages.post('/:id/roles', async (request) => {
      const { params, body, invalid, form } = request;
      const user = await users.requireById(idOf(params.id));
      const shown = { ...request, query: {} };
      if (invalid) return profile(user, shown, { grant: { values: form, errors: invalid } });
      const b = body as Static<typeof GrantBody>;
      try {
        const expiry = parseExpiry(b.expiryDate, tz());
        await users.grantRole(user.id, b.roleID, expiry);
        const role = await users.getRole(b.roleID);
        return { redirect: `${pages.base}/${user.id}`, notice: `${user.username} holds ${role?.name ?? 'the role'}${expiry && expiry !== PERMANENT ? ` until ${displayTimestamp(expiry, tz())}` : ''}.` };
      } catch (err) {
        return profile(user, shown, { grant: { values: form, errors: errorsFor(err, ['roleID', 'expiryDate'], { ROLE_NOT_FOUND: 'roleID' }) } });
      }
    }, { access: 'admin', body: GrantBody });

    pages.post('/:id/roles/:roleId/revoke', async ({ params }) => {
      const user = await users.requireById(idOf(params.id));
      const role = await users.getRole(idOf(params.roleId));
      const revoked = role ? await users.revokeRole(user.id, role.id) : false;
      return { redirect: `${pages.base}/${user.id}`, notice: revoked ? `${role!.name} taken from ${user.username}.` : `${user.username} did not hold that role.` };
    }, { access: 'admin' });
  },
};
