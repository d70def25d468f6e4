/** The promotions tests' set-up: a shop with promotions, a catalogue and buyers, and the admin calls that make promotions. */
import type { FastifyInstance } from 'fastify';
import { build, call, type TestLike } from '../../../test/helper.ts';
import { created, makeCategory, makeProduct } from '../../../test/fixtures.ts';

export { balanceOf, created, makeCategory, makeProduct, makeUser, read, rowCount, snapshot } from '../../../test/fixtures.ts';

export const FEATURES = ['users', 'credits', 'store', 'promotions'];
/** Every table a refused buy or redeem must leave as it was. */
export const TABLES = [
  'store_orders',
  'store_order_items',
  'store_order_adjustments',
  'store_products',
  'credits_ledger',
  'promotions_coupons',
  'promotions_coupon_players',
  'promotions_coupon_uses',
  'promotions_gift_cards',
  'promotions_gift_card_ledger',
  'promotions_sale_uses',
];

export interface Shop {
  app: FastifyInstance;
  /** Two categories: ranks and items. */
  ranks: number;
  items: number;
  /** 10.00 in ranks; 4.00 in items. */
  vip: number;
  sword: number;
}

export async function shop(t: TestLike, opts: { features?: string[]; config?: unknown; env?: Record<string, string> } = {}): Promise<Shop> {
  const app = await build(t, { features: opts.features ?? FEATURES, config: opts.config, env: opts.env });
  const ranks = await makeCategory(app, { name: 'Ranks' });
  const items = await makeCategory(app, { name: 'Items' });
  const vip = await makeProduct(app, { categoryID: ranks, name: 'VIP', price: '10.00' });
  const sword = await makeProduct(app, { categoryID: items, name: 'Sword', price: '4.00' });
  return { app, ranks, items, vip, sword };
}

export async function coupon(app: FastifyInstance, body: Record<string, unknown>): Promise<Record<string, any>> {
  return created(app, '/api/admin/promotions/coupons', body, 'json');
}

export async function giftCard(app: FastifyInstance, amount: string, code?: string): Promise<Record<string, any>> {
  return created(app, '/api/admin/promotions/gift-cards', { amount, ...(code ? { code } : {}) }, 'json');
}

export function buy(app: FastifyInstance, userID: number, products: unknown[], codes: { coupon?: string; giftCard?: string } = {}) {
  return call(app, '/api/store/buy', { body: { userID, products, ...codes }, as: 'json' });
}
