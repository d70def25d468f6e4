/**
 * An order's delivery as the player sees it, from its queued game commands: the account's order
 * pages and a followed payment's page both show it.
 */
import type { DeliveryService, QueueRow } from '../delivery/contract.ts';
import type { OrderRow } from '../store/contract.ts';

export type OrderState = 'waiting' | 'delivered' | 'failed' | 'refunded' | 'complete';
/** States an order may still leave: its page keeps asking. */
export const LIVE: OrderState[] = ['waiting'];

/** The names of the game servers that ran something of `rows`, when any did. */
export async function serverNames(delivery: DeliveryService | undefined, rows: QueueRow[]): Promise<Map<string, string>> {
  if (!delivery || !rows.some((r) => r.status === 'done')) return new Map();
  return new Map((await delivery.listServers()).map((s) => [s.id, s.name]));
}

/** An order's queued commands and the servers' names (none without the delivery feature). */
export async function deliveryRows(delivery: DeliveryService | undefined, orderId: number): Promise<{ rows: QueueRow[]; names: Map<string, string> }> {
  const rows = delivery ? await delivery.listQueue({ orderId, page: 1, perPage: 100 }) : [];
  return { rows, names: await serverNames(delivery, rows) };
}

/** An order's delivery as the player sees it, from its purchase commands. */
export function stateOf(order: Pick<OrderRow, 'id' | 'status'>, rows: QueueRow[], names: Map<string, string>): { state: OrderState; servers: string } {
  if (order.status === 'refunded') return { state: 'refunded', servers: '' };
  const mine = rows.filter((r) => r.orderID === order.id && r.trigger === 'purchase');
  // Commands are queued with the order, in its transaction: none is nothing to deliver.
  if (!mine.length) return { state: 'complete', servers: '' };
  if (mine.some((r) => r.status === 'waiting' || r.status === 'claimed')) return { state: 'waiting', servers: '' };
  if (mine.some((r) => r.status === 'failed')) return { state: 'failed', servers: '' };
  const servers = [...new Set(mine.filter((r) => r.status === 'done').map((r) => names.get(r.serverID) ?? `#${r.serverID}`))];
  return servers.length ? { state: 'delivered', servers: servers.join(', ') } : { state: 'complete', servers: '' };
}
