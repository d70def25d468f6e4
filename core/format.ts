/**
 * Formats at the edge of the API. Inside, money is integer cents and time is a UTC timestamp
 * string `YYYY-MM-DD HH:MM:SS` (sortable, identical on SQLite and MySQL, safe in raw SQL).
 */
import { clockNow } from './clock.ts';
import { DomainError } from './errors.ts';

/** The "never / permanent" value clients compare byte for byte. */
export const PERMANENT = '1000-01-01 00:00:00';

/** The most cents a money column holds: they are 32-bit integers on both databases. */
export const MAX_CENTS = 2_147_483_647;

/** Cents to a two-decimal string: 1250 → "12.50", -5 → "-0.05". */
export function formatMoney(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** Cents to the JSON number clients read as raw_credits: 1250 → 12.5. */
export function moneyNumber(cents: number): number {
  return cents / 100;
}

const MONEY = /^(\d{1,13})(?:\.(\d{1,2}))?$/;

/**
 * Parses a decimal amount with at most two places into cents, without floats.
 * Returns undefined for anything else (`abc`, `1e3`, `10.005`, `-1`, ` 5`, empty).
 */
export function parseMoney(value: unknown): number | undefined {
  if (typeof value === 'number') value = Number.isFinite(value) ? String(value) : '';
  if (typeof value !== 'string') return undefined;
  const match = MONEY.exec(value);
  if (!match) return undefined;
  const cents = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  return Number.isSafeInteger(cents) ? cents : undefined;
}

/** Like parseMoney, but throws the error code a route names for a bad amount. */
export function requireMoney(value: unknown, code = 'INVALID_AMOUNT', field = 'amount'): number {
  const cents = parseMoney(value);
  if (cents === undefined) throw new DomainError(code, `${field} must be a decimal number with at most two decimal places`);
  return cents;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** A Date as a stored UTC timestamp. */
export function toTimestamp(date: Date): string {
  return (
    `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`
  );
}

/** The current time (the host's clock) as a stored UTC timestamp. */
export function now(): string {
  return toTimestamp(new Date(clockNow()));
}

/** A stored UTC timestamp plus some seconds (negative to go back). */
export function addSeconds(timestamp: string, seconds: number): string {
  return toTimestamp(new Date(parseTimestamp(timestamp).getTime() + seconds * 1000));
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Parses a stored UTC timestamp. */
export function parseTimestamp(timestamp: string): Date {
  const m = TIMESTAMP.exec(timestamp);
  if (!m) throw new Error(`not a timestamp: ${timestamp}`);
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

const zoneFormatters = new Map<string, Intl.DateTimeFormat>();

function zoneFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = zoneFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    zoneFormatters.set(timeZone, f);
  }
  return f;
}

/** Offset of a time zone from UTC at a moment, in milliseconds. */
function zoneOffset(at: Date, timeZone: string): number {
  const parts: Record<string, string> = {};
  for (const { type, value } of zoneFormatter(timeZone).formatToParts(at)) parts[type] = value;
  const asUtc = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  return asUtc - Math.floor(at.getTime() / 1000) * 1000;
}

/** A stored UTC timestamp as clients see it, in the site's time zone. The sentinel stays as it is. */
export function displayTimestamp(timestamp: string, timeZone: string): string {
  if (timestamp === PERMANENT || timeZone === 'UTC') return timestamp;
  const at = parseTimestamp(timestamp);
  return toTimestamp(new Date(at.getTime() + zoneOffset(at, timeZone)));
}

/** A timestamp a client sent (in the site's time zone) as a stored UTC timestamp; undefined if malformed. */
export function parseClientTimestamp(value: string, timeZone: string): string | undefined {
  if (!TIMESTAMP.test(value)) return undefined;
  if (value === PERMANENT) return value;
  const local = parseTimestamp(value);
  if (toTimestamp(local) !== value) return undefined; // 2026-02-31 and friends
  if (timeZone === 'UTC') return value;
  const guess = new Date(local.getTime() - zoneOffset(local, timeZone));
  return toTimestamp(new Date(local.getTime() - zoneOffset(guess, timeZone)));
}

/** True if the time zone name is one Intl knows. */
export function isTimeZone(name: string): boolean {
  // UTC, the default, needs no Intl: a DateTimeFormat maps ICU's data into the process (docs/performance.md).
  if (name === 'UTC') return true;
  try {
    zoneFormatter(name);
    return true;
  } catch {
    return false;
  }
}

/** C0, DEL and C1 controls (`\p{Cc}`) and the line and paragraph separators. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;

/**
 * True if the text holds a control character, a line break among them. A value that ends up in a
 * game command, a URL or a header must not: a bridge that writes commands as lines would run what
 * follows a line break as a command of its own.
 */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/**
 * Orders names by their UTF-16 code units. The names sorted at start-up (features, settings,
 * migrations) are ASCII, and localeCompare would load ICU's collation data to order them.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A flag as the row format wants it. */
export function flag(value: boolean | number | null | undefined): '0' | '1' {
  return value ? '1' : '0';
}

/** "1 order", "2 orders": a count with its noun. */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
