import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';

export const IdParams = S.idParam('id');
export const EventParams = Type.Object({ event: Type.String({ minLength: 1, maxLength: 100 }) });
export const DeliveriesQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })) });

const endpointFields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  kind: Type.Union([Type.Literal('webhook'), Type.Literal('discord')], {
    description: 'webhook: signed JSON (Standard Webhooks); discord: an embed for a Discord webhook URL',
    default: 'webhook',
  }),
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) address the events are posted to' }),
  events: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    maxItems: 100,
    description: 'declared event names (GET /api/admin/notifications/events)',
  }),
  active: S.boolish(),
};
export const CreateEndpointBody = Type.Object({
  ...endpointFields,
  kind: Type.Optional(endpointFields.kind),
  active: Type.Optional(endpointFields.active),
  events: Type.Optional(endpointFields.events),
});
export const UpdateEndpointBody = Type.Partial(Type.Object(endpointFields));

const EVENT = 'store.order.completed';
const eventList = Type.Array(Type.String({ examples: [EVENT] }), { examples: [[EVENT, 'credits.changed']] });

export const EndpointRow = Type.Object({
  id: S.idStr(),
  name: S.example('ERP', 'a name for the console'),
  kind: S.example('webhook', 'webhook or discord'),
  url: S.example('https://erp.example.com/hooks/shop'),
  secret: S.example('whsec_ZXhhbXBsZSBzaWduaW5nIGtleSBvbmx5', 'the signing key receivers verify with'),
  events: eventList,
  active: Type.Boolean(),
  createdDate: S.dateStr(),
});

const Attempt = Type.Object({
  startedDate: S.dateStr(),
  durationMs: S.example('87', 'milliseconds until the answer or the failure'),
  status: S.strOrNull('the HTTP status, null when nothing came back', '500'),
  response: S.example('internal error', "the start of the answer's body"),
  error: S.strOrNull('why the attempt failed, null when it did not', 'The endpoint answered 500.'),
});
export const DeliveryRow = Type.Object({
  id: S.idStr(),
  endpointID: S.idStr(),
  messageID: S.example('msg_4f8e2a9c1b7d4e6f8a0b2c4d6e8f0a1b', 'the webhook-id header, the same on every try and redelivery'),
  event: S.example(EVENT),
  status: S.example('delivered', 'pending, sending, delivered or failed'),
  attempts: Type.Array(Attempt),
  nextAttemptDate: S.dateStr(),
  createdDate: S.dateStr(),
});

export const EventRow = Type.Object({
  name: S.example(EVENT),
  description: S.example('An order completed: a purchase paid from the balance or with money.'),
  feature: S.example('store'),
});
export const TemplateRow = Type.Object({
  event: S.example(EVENT),
  title: S.example('New purchase'),
  body: S.example('**{{username}}** bought {{items}} for **{{total}} {{currency}}**.'),
  custom: Type.Boolean(),
});
export const TemplateBody = Type.Object({
  title: Type.String({ maxLength: 256, description: 'may name payload values: {{username}}; empty with an empty body: the built-in wording' }),
  body: Type.String({ maxLength: 4000 }),
});
export const Deleted = S.ok();
