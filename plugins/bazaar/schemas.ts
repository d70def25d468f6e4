import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { ItemRow, ServerRow } from './contract.ts';

/** Every integer column is a 32-bit int: larger values are a validation error, not a database fault. */
const int32 = (opts: { minimum?: number } = {}) => Type.Integer({ minimum: -2147483648, maximum: 2147483647, ...opts });
const positiveId = () => int32({ minimum: 1 });

export const UserParams = S.idParam('user_id');
export const ItemParams = Type.Object({ ...S.idParam('user_id').properties, ...S.idParam('id').properties });
export const ServerParams = S.idParam('id');

export const ItemsQuery = Type.Object({
  serverID: Type.Optional(positiveId()),
});

export const AddItemBody = Type.Object({
  serverID: positiveId(),
  itemID: Type.String({ minLength: 1, maxLength: 128, description: 'item identifier, e.g. DIAMOND_SWORD' }),
  modelID: Type.Optional(Type.Union([int32(), Type.Null()])),
  name: Type.Optional(Type.String()),
  lore: Type.Optional(Type.String()),
  amount: int32({ minimum: 1 }),
  durability: int32(),
  maxDurability: int32(),
  enchantments: Type.Optional(Type.String()),
  // Spaces are allowed because clients that do not percent-encode turn `+` into a space (decisions.md §1).
  base64: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9+/=_ \\r\\n-]+$', description: 'base64 item data' }),
});

const serverFields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  slug: Type.String({ pattern: '^[a-z0-9_-]{1,64}$', description: 'lower case: slugs are unique case-insensitively on MySQL' }),
  imageID: Type.String({ maxLength: 64 }),
  imageType: Type.String({ maxLength: 16 }),
  priority: int32(),
  isActive: S.boolish(),
};
export const CreateServerBody = Type.Object({
  name: serverFields.name,
  slug: Type.Optional(serverFields.slug),
  imageID: Type.Optional(serverFields.imageID),
  imageType: Type.Optional(serverFields.imageType),
  priority: Type.Optional(serverFields.priority),
  isActive: Type.Optional(serverFields.isActive),
});
export const UpdateServerBody = Type.Partial(Type.Object(serverFields));

export const Success = S.success({ status: Type.Literal(true) });
export const Deleted = S.ok();
export const ItemList = Type.Array(ItemRow);
export const ServerList = Type.Array(ServerRow);
export { ServerRow };
