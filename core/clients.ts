/**
 * The error codes real clients can read. The official game plugins parse `error` into a Java
 * enum and crash on a code the enum lacks (`obj.getEnum` in their `Request`), so on the routes
 * they call the answer carries the nearest code they know in `error`, and ours in `code`.
 * docs/clients.md lists the mapping.
 */
export interface ClientErrors {
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

/** The game auth plugin's `ErrorCode` enum (minecraft-leaderos-auth, 12 codes). */
export const AUTH_PLUGIN_CODES = [
  'USER_NOT_FOUND', 'WRONG_PASSWORD', 'USERNAME_ALREADY_EXIST', 'EMAIL_ALREADY_EXIST', 'REGISTER_LIMIT', 'INVALID_USERNAME',
  'INVALID_EMAIL', 'INVALID_PASSWORD', 'WRONG_CODE', 'SESSION_NOT_FOUND', 'TFA_VERIFICATION_FAILED', 'UNKNOWN_ERROR',
] as const;

/**
 * The auth plugin's register sends no email by default and names no field in its errors: a
 * refused field maps to the code for that field.
 */
export const AUTH_PLUGIN: ClientErrors = {
  known: new Set(AUTH_PLUGIN_CODES),
  nearest(code, message) {
    if (code === 'VALIDATION_ERROR') {
      const field = /^(\w+)/.exec(message)?.[1];
      if (field === 'email') return 'INVALID_EMAIL';
      if (field === 'username') return 'INVALID_USERNAME';
      if (field === 'password') return 'INVALID_PASSWORD';
      if (field === 'code') return 'WRONG_CODE';
      if (field === 'token') return 'SESSION_NOT_FOUND';
    }
    return 'UNKNOWN_ERROR';
  },
};
