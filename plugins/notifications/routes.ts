import type { FastifyInstance } from 'fastify';
import { displayTimestamp } from '../../core/format.ts';
import type { TypeBoxProvider } from '../../core/schemas.ts';
import { toBool } from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { DeliveryView, EndpointView, NotificationsService } from './contract.ts';
import {
  CreateEndpointBody,
  Deleted,
  DeliveriesQuery,
  DeliveryRow,
  EndpointRow,
  EventParams,
  EventRow,
  IdParams,
  TemplateBody,
  TemplateRow,
  UpdateEndpointBody,
} from './schemas.ts';
import { Type, type Static } from '@sinclair/typebox';
import type { DeclaredEvent } from '../../core/events.ts';

const tags = ['admin'];
const base = '/api/admin/notifications';

export async function notificationsRoutes(
  fastify: FastifyInstance,
  notifications: NotificationsService,
  settings: SettingsService,
  declared: () => DeclaredEvent[],
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  const shown = (ts: string) => displayTimestamp(ts, settings.get().timezone);
  const endpoint = (e: EndpointView) => ({ ...e, id: String(e.id), createdDate: shown(e.createdDate) });
  const delivery = (d: DeliveryView) => ({
    id: String(d.id),
    endpointID: String(d.endpointId),
    messageID: d.messageId,
    event: d.event,
    status: d.status,
    attempts: d.attempts.map((a) => ({
      ...a,
      startedDate: shown(a.startedDate),
      durationMs: String(a.durationMs),
      status: a.status === null ? null : String(a.status),
    })),
    nextAttemptDate: shown(d.nextAttemptDate),
    createdDate: shown(d.createdDate),
  });
  const NOT_FOUND = ['NOTIFICATION_ENDPOINT_NOT_FOUND'];

  app.get(
    `${base}/events`,
    {
      schema: { tags, summary: 'Events an endpoint may subscribe to, as the enabled features declare them', response: { 200: Type.Array(EventRow) } },
    },
    async () => declared(),
  );

  app.get(
    `${base}/endpoints`,
    {
      schema: { tags, summary: 'Webhook and Discord endpoints', response: { 200: Type.Array(EndpointRow) } },
    },
    async () => (await notifications.endpoints()).map(endpoint),
  );

  app.post(
    `${base}/endpoints`,
    {
      schema: {
        tags,
        summary: 'Add an endpoint (its signing secret is made here)',
        body: CreateEndpointBody,
        response: { 201: EndpointRow },
        errors: ['NOTIFICATION_UNKNOWN_EVENT'],
      },
    },
    async (request, reply) => {
      const { name, kind = 'webhook', url, events = [], active } = request.body;
      const made = await notifications.createEndpoint({ name, kind, url, events, active: active === undefined ? true : toBool(active) });
      return reply.code(201).send(endpoint(made));
    },
  );

  app.get(
    `${base}/endpoints/:id`,
    {
      schema: { tags, summary: 'One endpoint', params: IdParams, response: { 200: EndpointRow }, errors: NOT_FOUND },
    },
    async (request) => endpoint(await notifications.endpoint(Number(request.params.id))),
  );

  app.patch(
    `${base}/endpoints/:id`,
    {
      schema: {
        tags,
        summary: 'Change an endpoint',
        params: IdParams,
        body: UpdateEndpointBody,
        response: { 200: EndpointRow },
        errors: [...NOT_FOUND, 'NOTIFICATION_UNKNOWN_EVENT'],
      },
    },
    async (request) => {
      const { active, ...rest } = request.body;
      return endpoint(await notifications.updateEndpoint(Number(request.params.id), { ...rest, active: active === undefined ? undefined : toBool(active) }));
    },
  );

  app.delete(
    `${base}/endpoints/:id`,
    {
      schema: { tags, summary: 'Delete an endpoint and its deliveries', params: IdParams, response: { 200: Deleted }, errors: NOT_FOUND },
    },
    async (request) => {
      await notifications.deleteEndpoint(Number(request.params.id));
      return { status: true as const };
    },
  );

  app.get(
    `${base}/endpoints/:id/deliveries`,
    {
      schema: {
        tags,
        summary: "An endpoint's newest deliveries with their attempts",
        params: IdParams,
        querystring: DeliveriesQuery,
        response: { 200: Type.Array(DeliveryRow) },
        errors: NOT_FOUND,
      },
    },
    async (request) => (await notifications.deliveries(Number(request.params.id), request.query.limit ?? 50)).map(delivery),
  );

  app.post(
    `${base}/endpoints/:id/test`,
    {
      schema: { tags, summary: 'Queue a notifications.test event for this endpoint only', params: IdParams, response: { 202: DeliveryRow }, errors: NOT_FOUND },
    },
    async (request, reply) => reply.code(202).send(delivery(await notifications.sendTest(Number(request.params.id)))),
  );

  deliveryRoutes(app, notifications, delivery);
}

/** One delivery and its redelivery, and the wording of chat announcements. */
function deliveryRoutes(fastify: FastifyInstance, notifications: NotificationsService, delivery: (d: DeliveryView) => Static<typeof DeliveryRow>): void {
  const app = fastify.withTypeProvider<TypeBoxProvider>();
  app.get(
    `${base}/deliveries/:id`,
    {
      schema: {
        tags,
        summary: 'One delivery with its attempts',
        params: IdParams,
        response: { 200: DeliveryRow },
        errors: ['NOTIFICATION_DELIVERY_NOT_FOUND'],
      },
    },
    async (request) => delivery(await notifications.delivery(Number(request.params.id))),
  );

  app.post(
    `${base}/deliveries/:id/redeliver`,
    {
      schema: {
        tags,
        summary: 'Send a delivered or failed delivery again (same webhook-id)',
        params: IdParams,
        response: { 202: DeliveryRow },
        errors: ['NOTIFICATION_DELIVERY_NOT_FOUND', 'NOTIFICATION_DELIVERY_QUEUED'],
      },
    },
    async (request, reply) => reply.code(202).send(delivery(await notifications.redeliver(Number(request.params.id)))),
  );

  app.get(
    `${base}/templates`,
    {
      schema: { tags, summary: 'The wording of chat announcements, by event', response: { 200: Type.Array(TemplateRow) } },
    },
    async () => notifications.templates(),
  );

  app.put(
    `${base}/templates/:event`,
    {
      schema: {
        tags,
        summary: "Change the wording of an event's announcement",
        params: EventParams,
        body: TemplateBody,
        response: { 200: TemplateRow },
        errors: ['NOTIFICATION_UNKNOWN_EVENT'],
      },
    },
    async (request) => notifications.setTemplate(request.params.event, request.body.title, request.body.body),
  );
}
