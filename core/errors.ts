/**
 * Domain errors: services throw these with the API's error code and never think about HTTP.
 * The central error handler (core/http.ts) is the only place that turns a code into a status.
 */
export class DomainError extends Error {
  readonly code: string;
  /** Sent as Retry-After (RATE_LIMITED, SERVICE_UNAVAILABLE). */
  readonly retryAfterSeconds?: number;
  constructor(code: string, message: string, options: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** HTTP status of every error code of api.md and decisions.md. Features may add codes of their own. */
export const errorStatus: Record<string, number> = {
  USER_NOT_FOUND: 404,
  WRONG_PASSWORD: 401,
  USERNAME_ALREADY_EXIST: 400,
  EMAIL_ALREADY_EXIST: 400,
  REGISTER_LIMIT: 400,
  INVALID_USERNAME: 400,
  SESSION_NOT_FOUND: 404,
  PRODUCT_NOT_FOUND: 404,
  INVALID_QUANTITY: 400,
  INSUFFICIENT_BALANCE: 400,
  OUT_OF_STOCK: 400,
  INVALID_VARIABLE: 400,
  INVALID_TYPE: 400,
  INVALID_LIMIT: 400,
  INSERT_ERROR: 400,
  DELETE_ERROR: 400,
  TICKET_NOT_FOUND: 404,
  INVALID_AMOUNT: 400,
  NOT_ENOUGH_CREDITS: 400,
  TARGET_USER_NOT_FOUND: 404,
  INVALID_TARGET: 400,
  INVALID_API_KEY: 401,
  FORBIDDEN: 403,
  VALIDATION_ERROR: 400,
  INVALID_EMAIL: 400,
  INVALID_PASSWORD: 400,
  WRONG_CODE: 400,
  ROLE_NOT_FOUND: 404,
  CATEGORY_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  ANSWER_NOT_FOUND: 404,
  ITEM_NOT_FOUND: 404,
  SERVER_NOT_FOUND: 404,
  TICKET_CLOSED: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
};

export function registerErrorCodes(codes: Record<string, number>): void {
  for (const [code, status] of Object.entries(codes)) {
    const known = errorStatus[code];
    if (known !== undefined && known !== status) {
      throw new Error(`Error code ${code} is already mapped to HTTP ${known}, not ${status}.`);
    }
    errorStatus[code] = status;
  }
}
