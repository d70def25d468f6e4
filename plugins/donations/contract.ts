/** The donations feature's contract: the donation boards, ranked sums or the latest payments. */
import { createServiceRef } from '../../core/registry.ts';

export const DONATION_TYPES = ['top-alltime', 'top-annual', 'top-monthly', 'top-daily', 'latest'] as const;
export type DonationType = (typeof DONATION_TYPES)[number];

/** Lines of a board when the client names no limit, and the most it may ask for. */
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

/** A board line: a user's sum over the period (ranked boards) or one payment (`latest`). */
export interface Donation {
  username: string;
  /** Cents. */
  amount: number;
  currency: string;
  /** Stored UTC timestamp: the payment's, or for a sum the latest payment in it. */
  date: string;
}

export interface DonationsService {
  /**
   * The board of `type`, `limit` lines at most. The top boards rank users by the sum of their
   * payments in the current calendar year, month or day of `timeZone`.
   */
  board(type: DonationType, limit: number, timeZone: string): Promise<Donation[]>;
}

export const donationsRef = createServiceRef<DonationsService>('donations');
