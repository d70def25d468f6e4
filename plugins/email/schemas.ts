import { Type } from '@sinclair/typebox';
import { ok } from '../../core/schemas.ts';

const login = Type.String({ minLength: 1, maxLength: 191, description: "the account's username or email", examples: ['Steve'] });
const lang = Type.Optional(
  Type.Union([Type.Literal('en'), Type.Literal('de')], {
    description: "the mail's language; the storefront's default when left out",
  }),
);
const token = Type.String({ minLength: 1, maxLength: 128, description: 'the token of the mailed link (its last path segment)' });

export const MailLinkBody = Type.Object({ login, lang });
export const ResetBody = Type.Object({ token, password: Type.String({ maxLength: 1024 }) });
export const TokenBody = Type.Object({ token });
export const Done = ok();
