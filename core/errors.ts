/**
 * Domain errors: services throw these with the API's error code and never think about HTTP.
 * The central error handler (core/http.ts) is the only place that turns a code into a status.
 */
export class DomainError extends Error {
  readonly code: string;
  /** Sent as Retry-After (RATE_LIMITED, SERVICE_UNAVAILABLE). */
  readonly retryAfterSeconds?: number;
  /** Fields the error body carries beside status, error and message; the route's schema for the status declares them. */
  readonly details?: Record<string, unknown>;
  constructor(code: string, message: string, options: { retryAfterSeconds?: number; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
    if (options.details !== undefined) this.details = options.details;
  }
}

/**
 * HTTP status of each error code: here the host's own, which any route may answer (a body that
 * fails its schema, a missing key, a fault); each feature adds its domain's codes through the
 * `errors` of its definition when it loads (core/features.ts).
 */
export const errorStatus: Record<string, number> = {
  VALIDATION_ERROR: 400,
  /** A malformed money amount, wherever it is (decisions.md §6; core/format.ts requireMoney). */
  INVALID_AMOUNT: 400,
  INVALID_API_KEY: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
};

/** Adds a feature's codes; a code already known with another status stops boot. Several features may declare one code alike. */
export function registerErrorCodes(codes: Record<string, number>): void {
  for (const [code, status] of Object.entries(codes)) {
    const known = errorStatus[code];
    if (known !== undefined && known !== status) {
      throw new Error(`Error code ${code} is already mapped to HTTP ${known}, not ${status}.`);
    }
    errorStatus[code] = status;
  }
}
