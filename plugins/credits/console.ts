/**
 * The credits feature on a player's page of the staff console (a panel of the players section):
 * the balance among the player's figures, a form adjusting it with a reason (admins), and the
 * ledger in keyset pages. The dashboard shows the credits in circulation.
 */
import { Type, type Static } from '@sinclair/typebox';
import { errorsFor, idOf } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney, requireMoney } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { PlayerPanel } from '../users/contract.ts';
import type { CreditsService } from './contract.ts';

const PAGE = 50;

const CreditsBody = Type.Object({
  direction: Type.Union([Type.Literal('add'), Type.Literal('remove')]),
  amount: Type.String({ minLength: 1 }),
  reason: Type.String({ minLength: 1, maxLength: 32 }),
});

export function creditsPanel(credits: CreditsService, settings: SettingsService): PlayerPanel {
  const tz = () => settings.get().timezone;
  return {
    dashboard: async () => [{ label: 'credits in circulation', value: formatMoney(await credits.inCirculation()) }],

    async view({ player, href, query, staff, failed }) {
      const before = idOf(query.before) || undefined;
      const [balance, ledger] = await Promise.all([credits.balance(player.id), credits.history(player.id, { limit: PAGE, before })]);
      const ledgerLink = (extra: Record<string, string>) => `${href}?${new URLSearchParams(extra)}`;
      return {
        stats: [{ label: 'credits', value: formatMoney(balance) }],
        blocks: [
          ...(staff.access === 'admin'
            ? [
                {
                  kind: 'form' as const,
                  id: 'adjust-credits',
                  title: 'Adjust credits',
                  action: `${href}/credits`,
                  submit: 'Adjust credits',
                  values: failed?.values ?? { direction: 'add' },
                  errors: failed?.errors,
                  fields: [
                    {
                      name: 'direction',
                      label: 'Change',
                      type: 'select' as const,
                      options: [
                        { value: 'add', label: 'add' },
                        { value: 'remove', label: 'remove' },
                      ],
                    },
                    { name: 'amount', label: 'Amount', type: 'number' as const, required: true, hint: 'e.g. 2.50' },
                    { name: 'reason', label: 'Reason', required: true, hint: 'Kept in the ledger; at most 32 characters.' },
                  ],
                },
              ]
            : []),
          {
            kind: 'table' as const,
            caption: 'Ledger, newest first',
            empty: 'No credit movement.',
            columns: [
              { key: 'date', label: 'Date' },
              { key: 'delta', label: 'Change', numeric: true },
              { key: 'balance', label: 'Balance', numeric: true },
              { key: 'reason', label: 'Reason' },
              { key: 'by', label: 'By' },
              { key: 'order', label: 'Order' },
            ],
            rows: ledger.map((e) => ({
              date: displayTimestamp(e.createdAt, tz()),
              delta: `${e.delta > 0 ? '+' : '-'}${formatMoney(Math.abs(e.delta))}`,
              balance: formatMoney(e.balance),
              reason: e.reason,
              by: e.keyName ?? '',
              order: e.orderId === null ? '' : `#${e.orderId}`,
            })),
            next: ledger.length === PAGE ? ledgerLink({ before: String(ledger.at(-1)!.id) }) : undefined,
            first: before !== undefined ? ledgerLink({}) : undefined,
          },
        ],
      };
    },

    actions: [
      {
        path: 'credits',
        body: CreditsBody,
        async run(player, { body, staff }) {
          const b = body as Static<typeof CreditsBody>;
          try {
            const cents = requireMoney(b.amount, 'INVALID_AMOUNT', 'amount');
            if (cents <= 0) throw new DomainError('INVALID_AMOUNT', 'amount must be at least 0.01');
            const after = await credits.change(player.id, b.direction === 'add' ? cents : -cents, { reason: b.reason, keyName: `console:${staff.username}` });
            return { notice: `${b.direction === 'add' ? 'Added' : 'Removed'} ${formatMoney(cents)}: ${player.username} now has ${formatMoney(after)}.` };
          } catch (err) {
            return { errors: errorsFor(err, ['amount', 'reason'], { NOT_ENOUGH_CREDITS: 'amount' }) };
          }
        },
      },
    ],
  };
}
