/**
 * Chat announcements: an event's payload shown as a Discord embed, worded by a template an owner
 * may edit. A template only names values (`{{username}}`); nothing in it runs.
 */
import { formatMoney } from '../../core/format.ts';

export interface Wording {
  title: string;
  body: string;
}

/** The built-in wording of the events owners announce most; others list their values. */
export const BUILT_IN: Record<string, Wording> = {
  'store.order.completed': { title: 'New purchase', body: '**{{username}}** bought {{items}} for **{{total}} {{currency}}**.' },
  'store.order.refunded': { title: 'Order refunded', body: 'Order #{{orderId}} of **{{username}}** was refunded.' },
  'payments.completed': { title: 'Payment received', body: '**{{amount}} {{currency}}** through {{gateway}} (order #{{orderId}}).' },
  'payments.reversed': { title: 'Payment {{kind}}', body: 'Payment {{paymentId}} through {{gateway}}: {{reclaimed}} credits taken back, {{debt}} owed.' },
  'payments.dispute.opened': {
    title: 'Payment disputed',
    body: 'Payment {{paymentId}} through {{gateway}} disputed ({{reason}}): **{{amount}} {{currency}}**.',
  },
  'payments.dispute.closed': { title: 'Dispute {{outcome}}', body: 'The dispute of payment {{paymentId}} through {{gateway}} was {{outcome}}.' },
  'payments.block.added': { title: 'Player blocked', body: '**{{username}}** may no longer pay: {{reason}}' },
  'payments.block.lifted': { title: 'Block lifted', body: '**{{username}}** may pay again (lifted by {{by}}).' },
  'support.ticket.created': { title: 'New ticket #{{ticketId}}', body: '**{{username}}** asks: {{title}}' },
  'support.ticket.replied': { title: 'Ticket #{{ticketId}} answered', body: '**{{username}}** replied (staff: {{isAdmin}}).' },
  'users.created': { title: 'New player', body: '**{{username}}** registered.' },
  'delivery.failed': { title: 'Delivery failed', body: '`{{command}}` for **{{username}}** (order #{{orderId}}): {{error}}' },
  'notifications.test': { title: 'Test announcement', body: 'Announcements reach this channel.' },
};

/** Payload fields in cents, shown as decimals in announcements. */
const MONEY = new Set(['total', 'amount', 'delta', 'balance', 'reclaimed', 'debt', 'price', 'unitPrice', 'unitTotal']);

export function wordingFor(event: string): Wording {
  return BUILT_IN[event] ?? { title: event, body: '' };
}

/** The values a template may name: the payload's fields (nested ones as `a.b`), money as decimals, lists joined. */
export function templateValues(event: string, payload: Record<string, unknown>): Record<string, string> {
  const values: Record<string, string> = { event };
  const add = (prefix: string, value: unknown) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      values[prefix] = value.map((v) => (typeof v === 'object' && v !== null ? describeItem(v as Record<string, unknown>) : String(v))).join(', ');
    } else if (typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) add(prefix ? `${prefix}.${k}` : k, v);
    } else {
      const key = prefix.split('.').at(-1)!;
      values[prefix] = typeof value === 'number' && MONEY.has(key) ? formatMoney(value) : String(value);
    }
  };
  add('', payload);
  return values;
}

/** A bought line: "2 × VIP" when a quantity and a name are there. */
function describeItem(item: Record<string, unknown>): string {
  const name = item.name ?? item.productName ?? item.productId;
  return item.quantity !== undefined ? `${String(item.quantity)} × ${String(name)}` : String(name);
}

export function render(template: string, values: Record<string, string>): string {
  // Own values only: `{{constructor}}` must not reach what every object inherits.
  return template.replace(/\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g, (_, name: string) => (Object.hasOwn(values, name) ? values[name]! : ''));
}

/** Discord's webhook body; mentions are off so a player's name cannot ping a channel. */
export function discordMessage(event: string, payload: Record<string, unknown>, wording: Wording, createdIso: string): string {
  const values = templateValues(event, payload);
  const body =
    wording.body ||
    Object.entries(values)
      .filter(([k]) => k !== 'event')
      .map(([k, v]) => `**${k}**: ${v}`)
      .join('\n');
  return JSON.stringify({
    allowed_mentions: { parse: [] },
    embeds: [{ title: render(wording.title, values).slice(0, 256), description: render(body, values).slice(0, 4096), timestamp: createdIso, color: 0x5865f2 }],
  });
}
