import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { VoteLinkRow } from './contract.ts';

export const LinksQuery = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 64, description: 'replaces {username} in each link' })),
});
export const LinkParams = S.idParam('id');

const fields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  link: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL; may hold {username}' }),
};
export const CreateLinkBody = Type.Object(fields);
export const UpdateLinkBody = Type.Partial(Type.Object(fields));
export const LinkList = Type.Array(VoteLinkRow);
export const Deleted = S.ok();
export { VoteLinkRow };
