/** The renderer: a stored command with its placeholders filled, and the checks that keep a control character from a game server. */
import { DomainError } from '../../core/errors.ts';
import { hasControlCharacter } from '../../core/format.ts';
import type { OrderItemEvent } from '../store/contract.ts';
import { CHARGEBACK_PRODUCT } from './model.ts';

const PLACEHOLDERS = new Set(['username', 'userID', 'quantity', 'orderID', 'productID', 'productName', 'chatUserID']);
const VARIABLE = /^var:([A-Za-z0-9_.-]{1,64})$/;

export const CONTROL_WHY = 'holds a line break or another control character: a game server would run what follows it as a command of its own';

/** Refuses a command with a placeholder the renderer would not fill: it would reach the game server as typed. */
export function checkPlaceholders(command: string): void {
  for (const [, name] of command.matchAll(/\{([^{}]*)\}/g)) {
    if (!PLACEHOLDERS.has(name!) && !VARIABLE.test(name!)) {
      throw new DomainError('VALIDATION_ERROR', `command: unknown placeholder {${name}}; use ${[...PLACEHOLDERS].map((p) => `{${p}}`).join(', ')} or ` +
        `{var:<name>}.`);
    }
  }
}

export interface RenderContext {
  username: string;
  userId: number;
  orderId: number;
  chatUserId: string;
  item: OrderItemEvent;
  /** The quantity {quantity} stands for: 1 for a command run once per unit. */
  quantity: number;
}

/**
 * The command as the game server gets it. Whatever the entry points let through (a value stored
 * before they checked, a future caller), a command with a control character is refused, never
 * emitted or stripped: the caller's transaction (a buy) rolls back and nothing is queued.
 */
export function render(command: string, c: RenderContext): string {
  const values: Record<string, string> = {
    username: c.username, userID: String(c.userId), quantity: String(c.quantity), orderID: String(c.orderId),
    productID: String(c.item.productId), productName: c.item.productName, chatUserID: c.chatUserId,
  };
  const of = c.item.productId === CHARGEBACK_PRODUCT ? 'a chargeback command' : `the command of product ${c.item.productId}`;
  if (hasControlCharacter(command)) throw new DomainError('VALIDATION_ERROR', `command: ${of} ${CONTROL_WHY}.`);
  return command.replace(/\{([^{}]*)\}/g, (whole, name: string) => {
    const variable = VARIABLE.exec(name);
    if (variable) {
      const value = Object.hasOwn(c.item.variables, variable[1]!) ? c.item.variables[variable[1]!]! : '';
      if (hasControlCharacter(value)) {
        throw new DomainError('INVALID_VARIABLE', `Invalid variable for product ${c.item.productId}: "${variable[1]}" ${CONTROL_WHY}.`);
      }
      return value;
    }
    const value = Object.hasOwn(values, name) ? values[name]! : whole;
    if (hasControlCharacter(value)) throw new DomainError('VALIDATION_ERROR', `${name}: in ${of}, {${name}} ${CONTROL_WHY}.`);
    return value;
  });
}
