import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';

export const IdParams = S.idParam('id');
export const EventParams = Type.Object({ event: Type.String({ minLength: 1, maxLength: 100 }) });
export const DeliveriesQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })) });

const endpointFields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  kind: Type.Union([Type.Literal('webhook'), Type.Literal('discord')], {
    description: 'webhook: signed JSON (Standard Webhooks); discord: an embed for a Discord webhook URL', default: 'webhook',
  }),
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) address the events are posted to' }),
  events: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    maxItems: 100, description: 'declared event names (GET /api/admin/notifications/events)',
  }),
  active: S.boolish(),
};
export const CreateEndpointBody = Type.Object({
  ...endpointFields,
  kind: Type.Optional(endpointFields.kind), active: Type.Optional(endpointFields.active), events: Type.Optional(endpointFields.events),
});
export const UpdateEndpointBody = Type.Partial(Type.Object(endpointFields));

export const EndpointRow = Type.Object({
  id: S.idStr(),
  name: S.str(),
  kind: S.str('webhook or discord'),
  url: S.str(),
  secret: S.str('the signing key receivers verify with (whsec_…)'),
  events: Type.Array(Type.String()),
  active: Type.Boolean(),
  createdDate: S.dateStr(),
});

const Attempt = Type.Object({
  startedDate: S.dateStr(),
  durationMs: S.str('milliseconds until the answer or the failure'),
  status: S.strOrNull('the HTTP status, null when nothing came back'),
  response: S.str('the start of the answer\'s body'),
  error: S.strOrNull(),
});
export const DeliveryRow = Type.Object({
  id: S.idStr(),
  endpointID: S.idStr(),
  messageID: S.str('the webhook-id header, the same on every try and redelivery'),
  event: S.str(),
  status: S.str('pending, sending, delivered or failed'),
  attempts: Type.Array(Attempt),
  nextAttemptDate: S.dateStr(),
  createdDate: S.dateStr(),
});

export const EventRow = Type.Object({ name: S.str(), description: S.str(), feature: S.str() });
export const TemplateRow = Type.Object({ event: S.str(), title: S.str(), body: S.str(), custom: Type.Boolean() });
export const TemplateBody = Type.Object({
  title: Type.String({ maxLength: 256, description: 'may name payload values: {{username}}; empty with an empty body: the built-in wording' }),
  body: Type.String({ maxLength: 4000 }),
});
export const Deleted = S.ok();
