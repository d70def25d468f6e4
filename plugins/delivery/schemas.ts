import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { CommandRow, ServerRow, TRIGGERS } from './contract.ts';

export const IdParams = S.idParam('id');
export const CommandParams = Type.Object({ id: IdParams.properties.id, commandId: IdParams.properties.id });
export const ServerList = Type.Array(ServerRow);
export const ServerWithToken = Type.Object({ ...ServerRow.properties, token: S.str('the secret the game server sends; shown only now') });
export const CreateServerBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  isActive: Type.Optional(S.boolish()),
});
export const UpdateServerBody = Type.Partial(CreateServerBody);

const commandFields = {
  serverID: S.numeric({ description: 'a game server ID' }),
  command: Type.String({ minLength: 1, maxLength: 4000, description: 'placeholders: {username} {userID} {quantity} {orderID} {productID} {productName} {chatUserID} {var:<name>}' }),
  trigger: Type.String({ enum: [...TRIGGERS] }),
  requireOnline: Type.Optional(S.boolish()),
  perUnit: Type.Optional(S.boolish()),
};
export const CreateCommandBody = Type.Object(commandFields);
export const UpdateCommandBody = Type.Partial(Type.Object(commandFields));
export const CommandList = Type.Array(CommandRow);

export const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
export const PluginQueue = Type.Array(Type.Object({
  id: S.str(), status: S.str('sending (never tried) or error (tried before)'), retry: S.str('tries so far'), updatedAt: S.str(),
}));
export const ValidateBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128 }),
  commands: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9]{1,18}$' }), { maxItems: 500, description: 'queue row IDs from the queue listing' })),
});
export const Validated = Type.Object({
  commands: Type.Array(Type.Object({ command: S.str(), username: S.str() }), { description: 'one player\'s commands, now marked done' }),
});
export const Deleted = S.ok();
export { CommandRow, ServerRow };
