/**
 * Limits on guessing codes (issue 44): a coupon or gift card code that is refused counts against
 * the client's address and against the account (a guest: the browser session, else the guest
 * name sent), in the database (core/rate-limits.ts), so every instance shares the count. Over
 * either limit every code is refused, a right one too, until the window ends: a word list gets
 * `max` tries per window, whatever the answers say.
 */
import { AttemptLimit, type AttemptRate } from '../../core/rate-limits.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import type { CodeSender, PurchaseBuyer } from '../store/contract.ts';

export interface WrongCodeLimits {
  /** Per client address, on the storefront. */
  perAddress: AttemptRate;
  /** Per account, or per guest (its storefront session, or the guest name an API client sends). */
  perAccount: AttemptRate;
  /** Per API client's address: a game server or web front end that many players share. */
  perApiClient: AttemptRate;
}

/** The answers a code that is not taken gets: unknown, paused, ended, used up, not for this basket. */
const WRONG = new Set(['PROMOTION_INVALID', 'PROMOTION_USED_UP', 'GIFT_CARD_NOT_FOUND']);

/** What a code's attempt counts against: an account, a guest's session, a guest's name. */
export function holderOf(buyer: PurchaseBuyer, sender: CodeSender): string {
  if ('userId' in buyer) return `account:${buyer.userId}`;
  return sender.session ? `session:${sender.session}` : `guest:${buyer.guestName.toLowerCase()}`;
}

export class WrongCodes {
  readonly #limit: AttemptLimit;
  readonly #limits: WrongCodeLimits;

  constructor(db: Database, limits: WrongCodeLimits) {
    this.#limit = new AttemptLimit(db, 'promotions wrong codes');
    this.#limits = limits;
  }

  /**
   * Runs `fn`, which judges a code `sender` sent for `holder` (none: the address alone), as one
   * attempt: claimed first, so guesses sent together are counted too, and given back unless `fn`
   * refused the code. Throws RATE_LIMITED (with Retry-After) while either count is over its limit.
   */
  async judging<T>(sender: CodeSender | undefined, holder: string | undefined, fn: () => Promise<T>): Promise<T> {
    if (!sender) return fn();
    const keys = [
      sender.api ? { key: `api:${sender.address}`, rate: this.#limits.perApiClient } : { key: `address:${sender.address}`, rate: this.#limits.perAddress },
      ...(holder ? [{ key: holder, rate: this.#limits.perAccount }] : []),
    ];
    const wait = await this.#limit.claim(keys);
    if (wait !== undefined) {
      throw new DomainError('RATE_LIMITED', `Too many wrong codes; try again in ${Math.ceil(wait / 60)} min (Retry-After).`, { retryAfterSeconds: wait });
    }
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      if (!(err instanceof DomainError && WRONG.has(err.code))) await this.#limit.giveBack(keys);
      throw err;
    }
    await this.#limit.giveBack(keys);
    return result;
  }
}
