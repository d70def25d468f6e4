/** HTTP shapes of the credits feature (api.md "Credits", decisions.md §6). */
import { Type } from '@sinclair/typebox';
import { EXAMPLE, dateStr, idStr, numeric, ok, row, str, strOrNull } from '../../core/schemas.ts';

const username = (description: string, minLength = 1) => Type.String({ minLength, maxLength: 191, description });

/** Kept loose: a malformed amount is INVALID_AMOUNT (api.md), decided by the handler, not VALIDATION_ERROR. */
const amount = numeric({ description: 'decimal with at most two places, e.g. `12.50`' });

/** Selects a user by `username` or by `id`: exactly one of them. */
export const UserQuery = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 191, description: 'username (case-insensitive)' })),
  id: Type.Optional(Type.String({ maxLength: 18, description: 'user ID' })),
});

export const HistoryQuery = Type.Object({
  ...UserQuery.properties,
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'rows to return, 1–100' }),
  before: Type.Optional(Type.Integer({ minimum: 1, description: 'only rows older than this ledger id (paging)' })),
});

export const ChangeBody = Type.Object({ target_username: username('the user whose balance changes'), amount });

export const SendBody = Type.Object({
  sender_username: username('the user who pays'),
  target_username: username('the user who receives'),
  amount,
});

export const SetBody = Type.Object({
  // Empty counts as absent: the legacy path names the user instead.
  target_username: Type.Optional(username("the user whose balance is set; defaults to the path's <user>", 0)),
  amount,
});

export const SetParams = Type.Object({ user: username('target username, used when the body has no target_username') });

const raw = () => Type.Number({ examples: [12.5] });
const currency = () => str(undefined, EXAMPLE.currency);

/** The older `<user>/send` form: the path names the sender unless the body does. */
export const SendAliasBody = Type.Object({
  sender_username: Type.Optional(username("the user who pays; defaults to the path's <user>", 0)),
  target_username: username('the user who receives'),
  amount,
});

export const UserParams = Type.Object({ user: Type.String({ minLength: 1, maxLength: 191, description: 'a user ID (digits) or a username' }) });

export const BalanceResponse = ok({ credits: str('`12.50 USD`', '12.50 USD'), raw_credits: raw(), currency: currency() });

export const ChangeResponse = ok({ current_credits: str('`12.50 USD`', '12.50 USD'), current_raw_credits: raw(), currency: currency() });

export const SendResponse = ok({
  current_credits: str("the sender's balance, `12.50 USD`", '12.50 USD'),
  current_raw_credits: raw(),
  target_current_credits: str("the target's balance", '7.50 USD'),
  target_current_raw_credits: Type.Number({ examples: [7.5] }),
  currency: currency(),
});

/** One ledger row; `delta` and `balance` (after the change) as two-decimal strings. */
export const LedgerRow = row({
  id: idStr(),
  userID: str(undefined, '7'),
  delta: str('decimal, negative when taken', '-2.50'),
  balance: str('decimal', '12.50'),
  reason: str('why the balance changed, e.g. add, send, receive, purchase', 'send'),
  keyName: strOrNull('name of the API key that made the change', 'game-server'),
  orderID: strOrNull('the store order of a purchase or refund', null),
  transferID: strOrNull('shared by both rows of a send', '9'),
  creationDate: dateStr(),
});
