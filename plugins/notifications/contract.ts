import { createServiceRef } from '../../core/registry.ts';

export type EndpointKind = 'webhook' | 'discord';

export interface EndpointInput {
  name: string;
  kind: EndpointKind;
  url: string;
  /** Declared event names (`GET /api/admin/notifications/events`). */
  events: string[];
  active: boolean;
}

export interface EndpointView extends EndpointInput {
  id: number;
  /** The signing key (`whsec_…`) receivers verify with. */
  secret: string;
  createdDate: string;
}

export interface AttemptView {
  startedDate: string;
  durationMs: number;
  status: number | null;
  response: string;
  error: string | null;
}

export interface DeliveryView {
  id: number;
  endpointId: number;
  /** The `webhook-id` header: the same on every try and redelivery of one event. */
  messageId: string;
  event: string;
  status: 'pending' | 'sending' | 'delivered' | 'failed';
  attempts: AttemptView[];
  nextAttemptDate: string;
  createdDate: string;
}

export interface TemplateView {
  event: string;
  title: string;
  body: string;
  /** False while the built-in wording is used. */
  custom: boolean;
}

/** Outbound webhooks and chat announcements of the events features declare. */
export interface NotificationsService {
  endpoints(): Promise<EndpointView[]>;
  endpoint(id: number): Promise<EndpointView>;
  createEndpoint(input: EndpointInput): Promise<EndpointView>;
  updateEndpoint(id: number, input: Partial<EndpointInput>): Promise<EndpointView>;
  deleteEndpoint(id: number): Promise<void>;
  /** The newest deliveries of one endpoint, each with its attempts. */
  deliveries(endpointId: number, limit: number): Promise<DeliveryView[]>;
  delivery(id: number): Promise<DeliveryView>;
  /** Sends a delivered or failed delivery again, with its event's id. */
  redeliver(id: number): Promise<DeliveryView>;
  /** Queues a `notifications.test` event for one endpoint only. */
  sendTest(endpointId: number): Promise<DeliveryView>;
  templates(): Promise<TemplateView[]>;
  /** Empty title and body go back to the built-in wording. */
  setTemplate(event: string, title: string, body: string): Promise<TemplateView>;
}

export const notificationsRef = createServiceRef<NotificationsService>('notifications');

declare module '../../core/events.ts' {
  interface EventMap {
    /** Never emitted on the bus: the name test deliveries carry. */
    'notifications.test': { endpointId: number };
  }
}
