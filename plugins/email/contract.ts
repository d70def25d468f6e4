/**
 * The email feature's contract: the single-use links it mails (password reset, email
 * verification, a guest's order), for the pages that take them (the storefront's). Receipts and
 * ticket replies need no call: the feature listens to the events of the order, payment and ticket
 * (a guest's receipt goes to the email typed at checkout, with a link to follow the order).
 */
import type { FastifyRequest } from 'fastify';
import { createServiceRef } from '../../core/registry.ts';

/** The languages mails are written in (the storefront's). */
export type MailLanguage = 'en' | 'de';

export interface EmailService {
  /** SMTP is configured: without it nothing is queued or sent. */
  readonly configured: boolean;
  /** Accounts registered with an email must confirm it before they sign in (plugins.email.requireVerification, with SMTP set). */
  readonly verificationRequired: boolean;
  /**
   * Mails a password reset link to the account named by `login` (its username or email), when it
   * exists and has an email. Says nothing either way, so the form cannot tell who has an account.
   */
  requestPasswordReset(login: string, lang: MailLanguage): Promise<void>;
  /** Whether a reset token is live (unused, unexpired): the reset page shows its form only then. */
  resetTokenLive(token: string): Promise<boolean>;
  /**
   * Sets the password of the token's account and uses the token up, both or neither. Throws
   * EMAIL_TOKEN_INVALID (unknown, used or expired) or INVALID_PASSWORD (the token stays live).
   */
  resetPassword(token: string, password: string): Promise<{ userId: number }>;
  /**
   * Counts a request for a mailed link to the account `login` names, known or not, against the
   * per-account limit (plugins.email.rateLimit.perAddress) that the API's routes count against
   * too. A front end calls it before asking for the link. Over the limit it throws RATE_LIMITED,
   * with the seconds left.
   */
  countMailLink(request: FastifyRequest, login: string): Promise<void>;
  /** Mails a new verification link to an unverified account named by `login`; says nothing either way. */
  resendVerification(login: string, lang: MailLanguage): Promise<void>;
  /** Marks the token's account verified and uses the token up. Throws EMAIL_TOKEN_INVALID. */
  verifyEmail(token: string): Promise<{ userId: number }>;
  /**
   * The order a guest's receipt links to (the token of its link, live for plugins.email.guestOrderDays
   * and usable many times), or undefined: a guest has no account to see the order under.
   */
  guestOrder(token: string): Promise<number | undefined>;
  /**
   * Queues a subscription's mail to its player, in the caller's transaction (it commits or rolls
   * back with the renewal or failure it tells of); nothing without SMTP or an email on the account.
   */
  queueSubscriptionMail(kind: SubscriptionMailKind, userId: number, mail: SubscriptionMail): Promise<void>;
}

/** A wallet renewal coming (`reminder`), a renewal paid (`receipt`), a renewal that failed (`failed`). */
export type SubscriptionMailKind = 'subscription-reminder' | 'subscription-receipt' | 'subscription-failed';

export interface SubscriptionMail {
  productName: string;
  /** Cents of `currency`: what the renewal takes, took, or could not take. */
  amount: number;
  currency: string;
  /** UTC `YYYY-MM-DD HH:MM:SS`: when it renews (reminder), the paid period's end (receipt), the grace's end (failed). */
  date: string;
}

export const emailRef = createServiceRef<EmailService>('email');
