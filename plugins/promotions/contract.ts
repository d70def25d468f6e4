/**
 * The promotions feature's contract: coupons, gift cards, sales and the community goal. It takes
 * part in every buy as a participant of the store's checkout (BuyParticipant); peers read its figures here.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';

/** The community goal: money received in a period against a target, as the LeaderOS game plugin reads it. */
export interface CommunityGoal {
  isActive: boolean;
  currency: string;
  /** Cents received from real sales in the period. */
  raised: number;
  /** Cents. */
  target: number;
  /** Stored UTC times: from `start`, before `end`. */
  start: string;
  end: string;
}

export interface PromotionsService {
  /** The goal now: the site settings' target over their period (the current month by default). */
  communityGoal(): Promise<CommunityGoal>;
  /** Puts a gift card's whole balance on the account's credit balance; the credits added, in cents. */
  redeemGiftCard(userId: number, code: string): Promise<number>;
  /** The sales running at `at` (a stored UTC time), the biggest first: what the storefront's banner announces. */
  runningSales(at: string): Promise<RunningSale[]>;
}

/** A sale as players are told of it. */
export interface RunningSale {
  name: string;
  percent: number;
  /** Stored UTC time the sale ends at. */
  endDate: string;
  /** Empty: the whole store. */
  categoryIds: number[];
}

export const promotionsRef = createServiceRef<PromotionsService>('promotions');

const DAY = '^$|^\\d{4}-\\d{2}-\\d{2}$';

/** The community goal's site settings: admins set them in the console's site settings. */
export const promotionsSettings = {
  promotionsGoalAmount: {
    schema: Type.Integer({ minimum: 0, maximum: 100_000_000, default: 0, description: 'whole units of the site currency; 0 = no goal', examples: [500] }),
    label: 'Community goal (whole currency units)',
    hint: 'Money from real sales the community aims for in the period; 0 hides the goal.',
  },
  promotionsGoalStart: {
    schema: Type.String({
      pattern: DAY,
      default: '',
      description: 'YYYY-MM-DD in the site time zone; empty = the first day of this month',
      examples: ['2026-12-01'],
    }),
    label: 'Community goal from (YYYY-MM-DD)',
    hint: 'Empty: the goal runs over each calendar month.',
  },
  promotionsGoalEnd: {
    schema: Type.String({
      pattern: DAY,
      default: '',
      description: 'YYYY-MM-DD, the last day counted; empty = the last day of this month',
      examples: ['2026-12-31'],
    }),
    label: 'Community goal until (YYYY-MM-DD, included)',
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof promotionsSettings> {}
}
