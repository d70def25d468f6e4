import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { ClaimedRow, CommandRow, HandedOut, PluginQueueRow, QUEUE_STATUSES, QueueRow, ServerRow, TRIGGERS } from './contract.ts';

export const IdParams = S.idParam('id');
export const CommandParams = Type.Object({ id: IdParams.properties.id, commandId: IdParams.properties.id });
export const ServerList = Type.Array(ServerRow);
export const ServerWithToken = Type.Object({
  ...ServerRow.properties,
  token: S.str('the secret the game server sends; shown only now', 'XgJcyfUCk8Kkg2TQzE-XgMhxmcQ0-kLT812Aw9qXfGs'),
});
export const CreateServerBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  isActive: Type.Optional(S.boolish()),
});
export const UpdateServerBody = Type.Partial(CreateServerBody);

const commandFields = {
  serverID: S.numeric({ description: 'a game server ID' }),
  command: Type.String({
    minLength: 1,
    maxLength: 4000,
    description: 'placeholders: {username} {userID} {quantity} {orderID} {productID} {productName} {chatUserID} {var:<name>}',
  }),
  trigger: Type.String({ enum: [...TRIGGERS] }),
  requireOnline: Type.Optional(S.boolish()),
  perUnit: Type.Optional(S.boolish()),
};
export const CreateCommandBody = Type.Object(commandFields);
export const UpdateCommandBody = Type.Partial(Type.Object(commandFields));
export const CommandList = Type.Array(CommandRow);

export const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
export const PluginQueue = Type.Array(PluginQueueRow);
export const ValidateBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128 }),
  commands: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9]{1,18}$' }), { maxItems: 500, description: 'queue row IDs from the queue listing' })),
});
export const Validated = Type.Object({
  commands: Type.Array(HandedOut, { description: "one player's commands, now marked done" }),
});
export const ClaimBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128 }),
  limit: Type.Optional(S.integerText({ description: '1-100, default 20' })),
  online: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000, description: 'usernames online now: their requireOnline rows may be claimed' }),
  ),
});
export const Claimed = Type.Object({ commands: Type.Array(ClaimedRow) });
export const AckBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128 }),
  ids: Type.Array(Type.String({ pattern: '^[0-9]{1,18}$' }), { minItems: 1, maxItems: 100 }),
  result: Type.String({ enum: ['done', 'failed'] }),
  message: Type.Optional(Type.String({ maxLength: 2000, description: 'why it failed' })),
});
export const Acked = S.ok({ ids: Type.Array(S.idStr(), { description: 'the rows settled: every row asked for' }) });
export const AckNotSettled = Type.Object(
  {
    status: Type.Literal(false),
    error: Type.Literal('DELIVERY_NOT_SETTLED'),
    message: Type.String(),
    ids: Type.Array(S.idStr(), { description: 'the rows settled by this ack' }),
    unsettled: Type.Array(S.idStr(), { description: 'the rows not settled: not claimed by this server, or their lease had lapsed (they may go out again)' }),
  },
  { description: 'Some rows were not settled: DELIVERY_NOT_SETTLED' },
);
export const StreamQuery = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
export const QueueQuery = Type.Object({
  server: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
  status: Type.Optional(Type.String({ enum: [...QUEUE_STATUSES] })),
  user: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
  order: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$' })),
  page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'from 1' })),
  perPage: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: '1-200, default 50' })),
});
export const QueueList = Type.Array(QueueRow);
/** A chargeback command, as the admin API and the console's form take it. */
export const ChargebackBody = Type.Object({
  serverID: Type.String({ pattern: '^[0-9]{1,15}$' }),
  command: Type.String({ minLength: 1, maxLength: 4000 }),
});
export const Deleted = S.ok();
export { CommandRow, QueueRow, ServerRow };
