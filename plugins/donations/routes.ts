/** The donation boards' endpoint (api.md): the query read as the game plugin sends it. */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { gamePlugin } from '../../core/clients.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { DEFAULT_LIMIT, DONATION_TYPES, MAX_LIMIT, type DonationType, type DonationsService } from './contract.ts';
import { DonationEntry, DonationsQuery } from './schemas.ts';

function parseType(value: unknown): DonationType {
  if (typeof value === 'string' && (DONATION_TYPES as readonly string[]).includes(value)) return value as DonationType;
  throw new DomainError('INVALID_TYPE', `type must be one of ${DONATION_TYPES.join(', ')}.`);
}

function parseLimit(value: unknown): number {
  if (value === undefined || value === '') return DEFAULT_LIMIT;
  const n = typeof value === 'string' && /^[0-9]{1,4}$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new DomainError('INVALID_LIMIT', `limit must be a whole number from 1 to ${MAX_LIMIT}.`);
  return n;
}

export async function donationsRoutes(fastify: FastifyInstance, donations: DonationsService, settings: SettingsService): Promise<void> {
  fastify.withTypeProvider<TypeBoxProvider>().get(
    '/api/store/donations',
    {
      // The game plugin's donation boards: it reads `error` into its enum (docs/clients.md).
      config: { clientErrors: gamePlugin() },
      schema: {
        tags: ['store'],
        summary: 'Donation boards',
        description:
          `type: ${DONATION_TYPES.join(', ')}. The top boards rank users by the sum of their payments in the current ` +
          `calendar year, month or day (site time zone), one line per user and currency; latest lists single payments, ` +
          `newest first. limit: 1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}.`,
        querystring: DonationsQuery,
        response: { 200: Type.Array(DonationEntry) },
        errors: ['INVALID_TYPE', 'INVALID_LIMIT'],
      },
    },
    async ({ query }) => {
      const type = parseType(query.type);
      const limit = parseLimit(query.limit);
      const { timezone } = settings.get();
      return (await donations.board(type, limit, timezone)).map((d) => ({
        display_name: d.username,
        username: d.username,
        total: `${formatMoney(d.amount)} ${d.currency}`,
        raw_total: formatMoney(d.amount),
        currency: d.currency,
        date: displayTimestamp(d.date, timezone),
      }));
    },
  );
}
