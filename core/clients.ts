/**
 * The error codes real clients can read. The official game plugins parse `error` into a Java
 * enum and crash on a code the enum lacks (`obj.getEnum` in their `Request`), so on the routes
 * they call the answer carries the nearest code they know in `error`, and ours in `code`.
 * docs/clients.md lists the mapping.
 */
import type { FastifyRequest } from 'fastify';

export interface ClientErrors {
  /** Who reads the codes, as the OpenAPI document names it. */
  client: string;
  /** The code to put in `error` for one of ours the client does not know. */
  nearest(code: string, message: string): string;
  known: ReadonlySet<string>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error codes the route's real client can read. */
    clientErrors?: ClientErrors;
  }
}

/** How one route translates our codes the client lacks, most specific first. */
export interface Nearest<Code extends string> {
  /** A refused field (VALIDATION_ERROR, whose message starts with the field's name) → a code. */
  fields?: Partial<Record<string, Code>>;
  /** One of our codes → a code. */
  codes?: Partial<Record<string, Code>>;
  /** Everything else. */
  otherwise: Code;
}

function clientErrors<Code extends string>(client: string, known: readonly Code[], { fields = {}, codes = {}, otherwise }: Nearest<Code>): ClientErrors {
  return {
    client,
    known: new Set(known),
    nearest(code, message) {
      if (code === 'VALIDATION_ERROR') {
        // `products.0.id must be ...`, `amount is required`: the first path segment names the field.
        const field = /^(\w+)/.exec(message)?.[1];
        const byField = field === undefined ? undefined : fields[field];
        if (byField) return byField;
      }
      return codes[code] ?? otherwise;
    },
  };
}

/** The game auth plugin's `ErrorCode` enum, 12 codes (docs/clients.md). */
export const AUTH_PLUGIN_CODES = [
  'USER_NOT_FOUND',
  'WRONG_PASSWORD',
  'USERNAME_ALREADY_EXIST',
  'EMAIL_ALREADY_EXIST',
  'REGISTER_LIMIT',
  'INVALID_USERNAME',
  'INVALID_EMAIL',
  'INVALID_PASSWORD',
  'WRONG_CODE',
  'SESSION_NOT_FOUND',
  'TFA_VERIFICATION_FAILED',
  'UNKNOWN_ERROR',
] as const;
export type AuthPluginCode = (typeof AUTH_PLUGIN_CODES)[number];

/**
 * The auth plugin's codes for one route. Its register sends no email by default and names no
 * field in its errors: a refused field maps to the code for that field; UNKNOWN_ERROR is its
 * generic failure.
 */
export function authPlugin({ codes, otherwise = 'UNKNOWN_ERROR' }: Partial<Nearest<AuthPluginCode>> = {}): ClientErrors {
  return clientErrors('the game auth plugin', AUTH_PLUGIN_CODES, {
    fields: { email: 'INVALID_EMAIL', username: 'INVALID_USERNAME', password: 'INVALID_PASSWORD', code: 'WRONG_CODE', token: 'SESSION_NOT_FOUND' },
    codes,
    otherwise,
  });
}

/** The official game plugin's `Error` enum, 18 codes (docs/clients.md). */
export const GAME_PLUGIN_CODES = [
  'USER_NOT_FOUND',
  'INVALID_QUANTITY',
  'INSUFFICIENT_BALANCE',
  'OUT_OF_STOCK',
  'PRODUCT_NOT_FOUND',
  'REQUIRED_PRODUCT',
  'REQUIRED_LINKED_ACCOUNT',
  'DOWNGRADE_NOT_ALLOWED',
  'INVALID_VARIABLE',
  'INVALID_LIMIT',
  'INVALID_TYPE',
  'INSERT_ERROR',
  'DELETE_ERROR',
  'TICKET_NOT_FOUND',
  'INVALID_AMOUNT',
  'NOT_ENOUGH_CREDITS',
  'INVALID_TARGET',
  'TARGET_USER_NOT_FOUND',
] as const;
export type GamePluginCode = (typeof GAME_PLUGIN_CODES)[number];

/**
 * The game plugin's codes for one route. Its enum has no generic failure; USER_NOT_FOUND is the
 * one it files under "general", so a route without a nearer one falls back to it.
 */
export function gamePlugin(nearest: Partial<Nearest<GamePluginCode>> = {}): ClientErrors {
  return clientErrors('the game plugin', GAME_PLUGIN_CODES, { otherwise: 'USER_NOT_FOUND', ...nearest });
}

/** `HttpURLConnection`'s default User-Agent, which both Java clients send: `Java/<version>`. */
const JAVA_AGENT = /^Java\/\d/;

/**
 * Whether the caller reads the Java clients' codes: it says it is `HttpURLConnection`, or its key
 * is marked for them. Everyone else (a website, a script) gets our own code in `error`.
 */
export function readsClientCodes(request: FastifyRequest): boolean {
  return request.apiKey?.clientCodes === true || JAVA_AGENT.test(request.headers['user-agent'] ?? '');
}
