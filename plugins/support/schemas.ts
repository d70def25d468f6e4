/** HTTP shapes of the support desk: the rows api.md shows, and what each route accepts. */
import { Type, type Static } from '@sinclair/typebox';
import { idStr, success, boolish } from '../../core/schemas.ts';

export { AnswerRow, CategoryRow, MessageRow, TicketDetailRow, TicketListRow, TicketMessageRow } from './contract.ts';

/** Ids stay strings so that ids beyond 2^53 are refused by the lookup, never rounded to another row. */
const idString = () => Type.String({ pattern: '^[0-9]{1,18}$' });
/** An author field a form may send empty beside the one it fills: empty means "not given". */
const optionalId = () => Type.Optional(Type.String({ pattern: '^[0-9]{0,18}$' }));
/** Query integers; int32 keeps limit/offset within what both databases accept. */
const queryInt = (minimum: number) => Type.Optional(Type.Integer({ minimum, maximum: 2147483647 }));
const statusId = () => Type.Integer({ minimum: 1, maximum: 4 });

/** Who writes: `accountID`, its alias `userID` (the chat bot), or the account linked to `chatUserID`. */
const authorFields = {
  accountID: optionalId(),
  userID: optionalId(),
  chatUserID: Type.Optional(Type.String({ maxLength: 64 })),
};

export const Paging = Type.Object({ limit: queryInt(1), offset: queryInt(0) });
export type Paging = Static<typeof Paging>;

export const TicketQuery = Type.Object({
  statusID: Type.Optional(statusId()),
  accountID: queryInt(1),
  categoryID: queryInt(1),
  ...Paging.properties,
});

export const MessageQuery = Type.Object({ accountID: queryInt(1), ...Paging.properties });

export const NewTicketBody = Type.Object({
  ...authorFields,
  categoryID: idString(),
  title: Type.String({ minLength: 1, maxLength: 255 }),
  message: Type.String({ minLength: 1 }),
  statusID: Type.Optional(statusId()),
});
export type NewTicketBody = Static<typeof NewTicketBody>;

export const NewMessageBody = Type.Object({
  ...authorFields,
  message: Type.String({ minLength: 1 }),
  isAdmin: Type.Optional(boolish()),
});

export const CategoryBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) });

export const AnswerBody = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 255 }),
  content: Type.String({ minLength: 1 }),
});

export const IdAnswer = success({ data: Type.Object({ id: idStr() }) });
