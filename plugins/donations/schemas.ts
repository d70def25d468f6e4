/** HTTP shapes of the donation boards (api.md). */
import { Type } from '@sinclair/typebox';
import { EXAMPLE, dateStr, str, usernameStr } from '../../core/schemas.ts';

export const DonationEntry = Type.Object({
  display_name: usernameStr(),
  username: usernameStr(),
  total: str('`<amount> <currency>`', '25.00 USD'),
  raw_total: str('decimal', '25.00'),
  currency: str(undefined, EXAMPLE.currency),
  date: dateStr(),
});

// Loose on purpose: a bad type or limit is INVALID_TYPE / INVALID_LIMIT (api.md), not a validation error.
export const DonationsQuery = Type.Object({ type: Type.Optional(Type.Unknown()), limit: Type.Optional(Type.Unknown()) });
