/**
 * The notifications feature's console section: endpoints (added, changed and deleted with the
 * record pages every list uses), each endpoint's recent deliveries with their attempts, a test
 * message and redelivery, and the wording of chat announcements.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  type ConsoleBlock,
  type ConsoleField,
  type ConsolePage,
  type ConsolePages,
  type ConsoleSection,
  type ShownForm,
  errorsFor,
  field,
  idOf,
  recordPages,
} from '../../core/console.ts';
import type { EventBus } from '../../core/events.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { DeliveryView, EndpointInput, EndpointView } from './contract.ts';
import { TemplateBody } from './schemas.ts';
import type { DbNotificationsService } from './service.ts';

/** The form's shape: events as names separated by spaces or commas, `active` a checkbox. */
const EndpointForm = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  kind: Type.Union([Type.Literal('webhook'), Type.Literal('discord')]),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  events: Type.Optional(Type.String({ maxLength: 4000 })),
  active: Type.Optional(S.boolish()),
});

function input(body: unknown): EndpointInput {
  const form = body as Static<typeof EndpointForm>;
  return { ...form, events: (form.events ?? '').split(/[\s,]+/).filter(Boolean), active: S.toBool(form.active) };
}

export const notificationsSection: ConsoleSection<unknown, DbNotificationsService> = {
  id: 'notifications',
  title: 'Webhooks',
  order: 85,
  pages(pages, ctx, notifications) {
    const np: NotificationPages = {
      pages,
      notifications,
      shown: (ts: string) => displayTimestamp(ts, ctx.settings.get().timezone),
      links: {
        kind: 'links',
        items: [
          { label: 'Endpoints', href: pages.base },
          { label: 'Announcement wording', href: `${pages.base}/templates` },
        ],
      },
    };
    endpointPages(np, ctx.events);
    deliveryPages(np);
    templatePages(np);
  },
};

/** What each group of pages works with: the links atop them and timestamps in the site's zone. */
interface NotificationPages {
  pages: ConsolePages;
  notifications: DbNotificationsService;
  shown: (ts: string) => string;
  links: Extract<ConsoleBlock, { kind: 'links' }>;
}

/** An endpoint's form; its events' hint names every event the features declare. */
const names = (events: EventBus) =>
  events
    .declared()
    .map((e) => e.name)
    .join(', ');
const fields = (events: EventBus): ConsoleField[] => [
  { name: 'name', label: 'Name', required: true },
  {
    name: 'kind',
    label: 'Kind',
    type: 'select',
    hint: "Discord: a channel's webhook URL, sent readable announcements; webhook: signed JSON for your systems.",
    options: [
      { value: 'webhook', label: 'Signed webhook' },
      { value: 'discord', label: 'Discord announcement' },
    ],
  },
  { name: 'url', label: 'URL', required: true, hint: 'Where the events are posted (http or https).' },
  { name: 'events', label: 'Events', hint: `Names separated by spaces: ${names(events)}.` },
  { name: 'active', label: 'Active', type: 'checkbox' },
];

/** The endpoints: listed, added, changed and deleted with the record pages every list uses. */
function endpointPages({ pages, notifications, links }: NotificationPages, events: EventBus): void {
  recordPages<EndpointView>(pages, {
    path: '',
    title: 'Endpoints',
    noun: 'endpoint',
    above: [links],
    fields: fields(events),
    columns: [
      { key: 'kind', label: 'Kind' },
      { key: 'events', label: 'Events' },
      { key: 'active', label: 'Active' },
      { key: 'deliveries', label: 'Deliveries' },
    ],
    createBody: EndpointForm,
    editBody: EndpointForm,
    list: () => notifications.endpoints(),
    get: (id) => notifications.endpoint(id),
    create: ({ body }) => notifications.createEndpoint(input(body)),
    update: (id, { body }) => notifications.updateEndpoint(id, input(body)),
    remove: (id) => notifications.deleteEndpoint(id),
    idOf: (e) => e.id,
    nameOf: (e) => e.name,
    values: (e) => ({ name: e.name, kind: e.kind, url: e.url, events: e.events.join(' '), ...(e.active ? { active: 'true' } : {}) }),
    initial: { active: 'true' },
    cells: (e) => ({
      kind: e.kind,
      events: e.events.join(' ') || 'none',
      active: e.active ? 'yes' : 'no',
      deliveries: { text: `Deliveries of ${e.name}`, href: `${pages.base}/${e.id}/deliveries` },
    }),
    errorFields: { NOTIFICATION_UNKNOWN_EVENT: 'events' },
  });
}

/** A delivery's attempts: how many, and how the last one ended. */
const attemptsOf = (d: DeliveryView) => {
  const last = d.attempts.at(-1);
  return last ? `${d.attempts.length}, last ${last.status ?? last.error ?? 'no answer'}` : '0';
};

/** An endpoint's recent deliveries with their attempts, a test message, and a delivery sent again. */
function deliveryPages({ pages, notifications, shown, links }: NotificationPages): void {
  pages.get('/:id/deliveries', async ({ params }) => {
    const e = await notifications.endpoint(idOf(params.id));
    const list = await notifications.deliveries(e.id, 50);
    return {
      title: `Deliveries of ${e.name}`,
      blocks: [
        links,
        {
          kind: 'stats',
          items: [
            { label: 'URL', value: e.url },
            { label: 'kind', value: e.kind },
            { label: 'signing secret', value: e.secret },
          ],
        },
        { kind: 'form', id: 'send-test', title: 'Test', action: `${pages.base}/${e.id}/test`, submit: 'Send a test message', fields: [] },
        {
          kind: 'table',
          caption: 'Recent deliveries, newest first',
          empty: 'Nothing sent to this endpoint yet.',
          columns: [
            { key: 'created', label: 'Queued' },
            { key: 'event', label: 'Event' },
            { key: 'status', label: 'Status' },
            { key: 'attempts', label: 'Attempts' },
            { key: 'redeliver', label: 'Redeliver' },
          ],
          rows: list.map((d) => ({
            created: shown(d.createdDate),
            event: { text: d.event, href: `${pages.base}/deliveries/${d.id}` },
            status: d.status,
            attempts: attemptsOf(d),
            redeliver:
              d.status === 'delivered' || d.status === 'failed'
                ? { action: `${pages.base}/deliveries/${d.id}/redeliver`, label: `Redeliver ${d.event} #${d.id}` }
                : '',
          })),
        },
      ],
    };
  });

  pages.post('/:id/test', async ({ params }) => {
    const e = await notifications.endpoint(idOf(params.id));
    await notifications.sendTest(e.id);
    return { redirect: `${pages.base}/${e.id}/deliveries`, notice: `A test message is on its way to ${e.name}.` };
  });

  pages.get('/deliveries/:id', async ({ params }) => {
    const d = await notifications.delivery(idOf(params.id));
    const e = await notifications.endpoint(d.endpointId);
    return {
      title: `${d.event} to ${e.name}`,
      blocks: [
        { kind: 'links', items: [{ label: `Deliveries of ${e.name}`, href: `${pages.base}/${e.id}/deliveries` }] },
        {
          kind: 'stats',
          items: [
            { label: 'status', value: d.status },
            { label: 'webhook-id', value: d.messageId },
            { label: 'queued', value: shown(d.createdDate) },
            { label: 'next attempt', value: d.status === 'pending' ? shown(d.nextAttemptDate) : '–' },
          ],
        },
        {
          kind: 'table',
          caption: 'Attempts',
          empty: 'Not tried yet.',
          columns: [
            { key: 'started', label: 'Started' },
            { key: 'ms', label: 'Time (ms)', numeric: true },
            { key: 'status', label: 'Answer' },
            { key: 'response', label: 'Body (start)' },
            { key: 'error', label: 'Error' },
          ],
          rows: d.attempts.map((a) => ({
            started: shown(a.startedDate),
            ms: String(a.durationMs),
            status: a.status === null ? 'none' : String(a.status),
            response: a.response,
            error: a.error ?? '',
          })),
        },
        ...(d.status === 'delivered' || d.status === 'failed'
          ? [
              {
                kind: 'form' as const,
                id: 'redeliver',
                title: 'Redeliver',
                action: `${pages.base}/deliveries/${d.id}/redeliver`,
                submit: 'Send again',
                fields: [],
              },
            ]
          : []),
      ],
    };
  });

  pages.post('/deliveries/:id/redeliver', async ({ params }) => {
    const d = await notifications.delivery(idOf(params.id));
    try {
      await notifications.redeliver(d.id);
      return { redirect: `${pages.base}/${d.endpointId}/deliveries`, notice: `${d.event} #${d.id} is queued again.` };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      return { redirect: `${pages.base}/${d.endpointId}/deliveries`, notice: err.message };
    }
  });
}

/** The wording of chat announcements, by event. */
function templatePages({ pages, notifications, links }: NotificationPages): void {
  const templatePage = async (event: string, edit?: ShownForm): Promise<ConsolePage> => {
    const template = (await notifications.templates()).find((t) => t.event === event);
    if (!template) throw new DomainError('NOTIFICATION_UNKNOWN_EVENT', `No feature declares the event "${event}".`);
    return {
      title: `Announcement of ${event}`,
      status: edit ? 422 : 200,
      blocks: [
        links,
        {
          kind: 'text',
          heading: 'Placeholders',
          text:
            'Name a value of the event between double braces, e.g. {{username}} or {{total}}; money shows as a decimal, lists ' +
            'joined. Nothing else in the text runs. Leave both empty for the built-in wording.',
        },
        {
          kind: 'form',
          id: 'template',
          title: 'Wording',
          action: `${pages.base}/templates/${encodeURIComponent(event)}`,
          submit: 'Save wording',
          values: edit?.values ?? { title: template.title, body: template.body },
          errors: edit?.errors,
          fields: [
            { name: 'title', label: 'Title' },
            { name: 'body', label: 'Text', type: 'textarea' },
          ],
        },
      ],
    };
  };

  pages.get('/templates', async () => ({
    title: 'Announcement wording',
    blocks: [
      links,
      {
        kind: 'table',
        caption: 'Announcements by event',
        columns: [
          { key: 'event', label: 'Event' },
          { key: 'title', label: 'Title' },
          { key: 'custom', label: 'Changed' },
        ],
        rows: (await notifications.templates()).map((t) => ({
          event: { text: t.event, href: `${pages.base}/templates/${encodeURIComponent(t.event)}` },
          title: t.title,
          custom: t.custom ? 'yes' : 'no',
        })),
      },
    ],
  }));

  pages.get('/templates/:event', async ({ params }) => templatePage(params.event ?? ''));

  pages.post(
    '/templates/:event',
    async ({ params, form, invalid }) => {
      const event = params.event ?? '';
      if (invalid) return templatePage(event, { values: form, errors: invalid });
      try {
        await notifications.setTemplate(event, field(form, 'title'), field(form, 'body'));
        return { redirect: `${pages.base}/templates`, notice: `The announcement of ${event} is saved.` };
      } catch (err) {
        return templatePage(event, { values: form, errors: errorsFor(err, ['title', 'body']) });
      }
    },
    { body: Type.Partial(TemplateBody) },
  );
}
