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
      throw new DomainError(
        'VALIDATION_ERROR',
        `command: unknown placeholder {${name}}; use ${[...PLACEHOLDERS].map((p) => `{${p}}`).join(', ')} or {var:<name>}.`,
      );
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
    username: c.username,
    userID: String(c.userId),
    quantity: String(c.quantity),
    orderID: String(c.orderId),
    productID: String(c.item.productId),
    productName: c.item.productName,
    chatUserID: c.chatUserId,
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

/** Every control character written as its `\uXXXX` escape: text that shows what was there and runs as one line. */
function escapeControls(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]/gu, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * For what staff or a sweep set going (a refund, a role's expiry, a chargeback), which data stored
 * before the checks must not block: a command the renderer refuses comes back with its control
 * characters escaped and the refusal, to be kept as a failed row staff see, never handed out as it is.
 */
export function renderOrRefuse(command: string, c: RenderContext): { text: string; refused?: string } {
  try {
    return { text: render(command, c) };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const variables = Object.fromEntries(Object.entries(c.item.variables).map(([k, v]) => [k, escapeControls(v)]));
    const escaped = {
      ...c,
      username: escapeControls(c.username),
      chatUserId: escapeControls(c.chatUserId),
      item: { ...c.item, productName: escapeControls(c.item.productName), variables },
    };
    return { text: render(escapeControls(command), escaped), refused: err.message };
  }
}
