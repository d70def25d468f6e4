/**
 * The promotions' endpoints: the community goal where LeaderOS clients read it
 * (`GET /api/store/community-goal`), a gift card's balance, its redemption onto the credit
 * balance, a player's gift cards, and the admin API for coupons, gift cards and sales.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../core/errors.ts';
import { formatMoney, now } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { UserRefParams, type UsersService } from '../users/contract.ts';
import type { DbPromotionsService } from './service.ts';
import { holderOf, type WrongCodes } from './wrong-codes.ts';
import {
  COUPON_DEFAULTS,
  CommunityGoalRow,
  CouponBody,
  CouponPatchBody,
  CouponRow,
  GiftCardBody,
  GiftCardPatchBody,
  GiftCardRow,
  GiftProductBody,
  GiftProductRow,
  LedgerEntry,
  RedeemBody,
  SaleBody,
  SalePatchBody,
  SaleRow,
  cents,
  couponInput,
  couponRow,
  giftCardRow,
  goalRow,
  ledgerEntry,
  saleInput,
  saleRow,
} from './schemas.ts';

const IdParam = Type.Object({ id: Type.String({ maxLength: 32 }) });
const CodeParam = Type.Object({ code: Type.String({ minLength: 1, maxLength: 64 }) });
const pathId = (id: string) => (/^[0-9]{1,15}$/.test(id) ? Number(id) : 0);

export async function promotionsRoutes(
  host: FastifyInstance,
  promotions: DbPromotionsService,
  users: UsersService,
  settings: SettingsService,
  wrongCodes: WrongCodes,
): Promise<void> {
  const routes: PromotionRoutes = { app: host.withTypeProvider<S.TypeBoxProvider>(), promotions, tz: () => settings.get().timezone };
  publicRoutes(routes, users, wrongCodes);
  couponRoutes(routes);
  giftCardRoutes(routes);
  giftProductRoutes(routes);
  saleRoutes(routes);
}

/** What each group of routes works with. */
interface PromotionRoutes {
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, S.TypeBoxProvider>;
  promotions: DbPromotionsService;
  tz: () => string;
}

const admin = ['admin'];
const done = { status: true as const };

/** The community goal, a gift card's balance and its redemption, and a player's gift cards. */
function publicRoutes({ app, promotions, tz }: PromotionRoutes, users: UsersService, wrongCodes: WrongCodes): void {
  app.get(
    '/api/store/community-goal',
    {
      schema: {
        tags: ['promotions'],
        summary: 'The community goal: real money received this period against its target',
        description:
          'The shape the LeaderOS game plugin reads (`is_active`, `currency`, `total_raised`, `goal_amount`, `percentage_achieved`). ' +
          'The target and period are site settings (promotionsGoalAmount, promotionsGoalStart, promotionsGoalEnd); by default each calendar month ' +
          'in the site time zone. Raised counts completed real-money orders (gateway purchases and top-ups), refunds left out.',
        response: { 200: CommunityGoalRow },
      },
    },
    async () => goalRow(await promotions.communityGoal(), tz()),
  );

  app.get(
    '/api/promotions/gift-cards/:code',
    {
      schema: {
        tags: ['promotions'],
        summary: "A gift card's balance, by its code (case-insensitive)",
        params: CodeParam,
        response: { 200: Type.Object({ code: S.example('K7M2QX9RT4WB6PZA'), balance: S.moneyStr(), isActive: S.flagStr('0: paused') }) },
        errors: ['GIFT_CARD_NOT_FOUND', 'RATE_LIMITED'],
      },
    },
    async ({ params, ip }) => {
      const card = await wrongCodes.judging({ address: ip, api: true }, undefined, () => promotions.cardByCode(params.code));
      return { code: card.code, balance: formatMoney(card.balance), isActive: card.isActive ? '1' : '0' };
    },
  );

  app.post(
    '/api/promotions/gift-cards/redeem',
    {
      config: { idempotent: 'transaction' },
      schema: {
        tags: ['promotions'],
        summary: "Put a gift card's whole balance on a player's credit balance",
        body: RedeemBody,
        response: { 200: S.ok({ credited: S.moneyStr('decimal: credits added'), credits: S.moneyStr('decimal: the balance after') }) },
        errors: ['USER_NOT_FOUND', 'PROMOTION_INVALID', 'PROMOTION_USED_UP', 'RATE_LIMITED'],
      },
    },
    async ({ body, ip }) => {
      const userID = String(body.userID).trim();
      if (!/^[0-9]{1,15}$/.test(userID)) throw new DomainError('VALIDATION_ERROR', 'userID must be a whole number');
      const user = await users.requireById(Number(userID));
      const sender = { address: ip, api: true };
      const credited = await wrongCodes.judging(sender, holderOf({ userId: user.id }, sender), () => promotions.redeemGiftCard(user.id, body.code));
      return { status: true as const, credited: formatMoney(credited), credits: formatMoney(await promotions.balanceOf(user.id)) };
    },
  );

  app.get(
    '/api/users/:userId/gift-cards',
    {
      schema: {
        tags: ['promotions'],
        summary: 'The gift cards a player bought, newest first; `<userId>` may also be a username',
        params: UserRefParams,
        response: { 200: Type.Array(GiftCardRow) },
        errors: ['USER_NOT_FOUND'],
      },
    },
    async ({ params }) => {
      const user = await users.requireByIdOrUsername(params.userId);
      const figures = await promotions.figures('card');
      return (await promotions.cardsOf(user.id)).map((c) => giftCardRow(c, figures.get(c.id), tz()));
    },
  );
}

/** Admin: coupons. */
function couponRoutes({ app, promotions, tz }: PromotionRoutes): void {
  app.get(
    '/api/admin/promotions/coupons',
    {
      schema: { tags: admin, summary: 'Coupons, newest first, with their uses and revenue', response: { 200: Type.Array(CouponRow) } },
    },
    async () => {
      const figures = await promotions.figures('coupon');
      return (await promotions.coupons()).map((c) => couponRow(c, figures.get(c.id), tz()));
    },
  );
  const oneCoupon = async (id: number) => couponRow(await promotions.requireCoupon(id), (await promotions.figures('coupon')).get(id), tz());
  app.post(
    '/api/admin/promotions/coupons',
    {
      schema: {
        tags: admin,
        summary: 'Create a coupon',
        description:
          'A percent coupon takes `value`% off the lines it applies to, a fixed one up to `value` off them. ' +
          'It also lowers lines a sale lowers unless `stacksWithSale` is false; it starts active unless `isActive` is false. ' +
          'The last of `maxUses` is decided by the database: of buyers racing for it, exactly as many as are left get it.',
        body: CouponBody,
        response: { 201: CouponRow },
        errors: ['CONFLICT'],
      },
    },
    async ({ body }, reply) => {
      const input = { ...COUPON_DEFAULTS, ...Object.fromEntries(Object.entries(couponInput(body, tz())).filter(([, v]) => v !== undefined)) };
      const coupon = await promotions.createCoupon(input as Parameters<DbPromotionsService['createCoupon']>[0]);
      return reply.code(201).send(couponRow(coupon, undefined, tz()));
    },
  );
  app.get(
    '/api/admin/promotions/coupons/:id',
    {
      schema: { tags: admin, summary: 'One coupon', params: IdParam, response: { 200: CouponRow }, errors: ['COUPON_NOT_FOUND'] },
    },
    async ({ params }) => oneCoupon(pathId(params.id)),
  );
  app.patch(
    '/api/admin/promotions/coupons/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change or pause a coupon (`isActive`)',
        params: IdParam,
        body: CouponPatchBody,
        response: { 200: CouponRow },
        errors: ['COUPON_NOT_FOUND', 'CONFLICT'],
      },
    },
    async ({ params, body }) => {
      const current = await promotions.requireCoupon(pathId(params.id));
      await promotions.updateCoupon(current.id, couponInput(body, tz(), current.kind));
      return oneCoupon(current.id);
    },
  );
  app.delete(
    '/api/admin/promotions/coupons/:id',
    {
      schema: { tags: admin, summary: 'Delete a coupon (the orders keep its code)', params: IdParam, response: { 200: S.ok() }, errors: ['COUPON_NOT_FOUND'] },
    },
    async ({ params }) => {
      await promotions.deleteCoupon(pathId(params.id));
      return done;
    },
  );
}

/** Admin: gift cards. */
function giftCardRoutes({ app, promotions, tz }: PromotionRoutes): void {
  app.get(
    '/api/admin/promotions/gift-cards',
    {
      schema: { tags: admin, summary: 'Gift cards, newest first', response: { 200: Type.Array(GiftCardRow) } },
    },
    async () => {
      const figures = await promotions.figures('card');
      return (await promotions.cards()).map((c) => giftCardRow(c, figures.get(c.id), tz()));
    },
  );
  app.post(
    '/api/admin/promotions/gift-cards',
    {
      config: { idempotent: 'transaction' },
      schema: {
        tags: admin,
        summary: 'Issue a gift card; without `code` the server makes one',
        body: GiftCardBody,
        response: { 201: GiftCardRow },
        errors: ['CONFLICT'],
      },
    },
    async ({ body }, reply) => {
      const card = await promotions.issueCard({ amount: cents(body.amount, 'amount', 1), code: body.code || undefined, note: body.note });
      return reply.code(201).send(giftCardRow(card, undefined, tz()));
    },
  );
  app.get(
    '/api/admin/promotions/gift-cards/:id',
    {
      schema: {
        tags: admin,
        summary: 'One gift card with every movement of its balance',
        params: IdParam,
        response: { 200: Type.Object({ ...GiftCardRow.properties, ledger: Type.Array(LedgerEntry) }) },
        errors: ['GIFT_CARD_NOT_FOUND'],
      },
    },
    async ({ params }) => {
      const card = await promotions.requireCard(pathId(params.id));
      const [figures, ledger] = await Promise.all([promotions.figures('card'), promotions.ledgerOf(card.id)]);
      return { ...giftCardRow(card, figures.get(card.id), tz()), ledger: ledger.map((l) => ledgerEntry(l, tz())) };
    },
  );
  app.patch(
    '/api/admin/promotions/gift-cards/:id',
    {
      schema: {
        tags: admin,
        summary: 'Pause or resume a gift card, or change its note',
        params: IdParam,
        body: GiftCardPatchBody,
        response: { 200: GiftCardRow },
        errors: ['GIFT_CARD_NOT_FOUND'],
      },
    },
    async ({ params, body }) => {
      const isActive = body.isActive === undefined ? undefined : S.toBool(body.isActive);
      const card = await promotions.updateCard(pathId(params.id), { isActive, note: body.note });
      return giftCardRow(card, (await promotions.figures('card')).get(card.id), tz());
    },
  );
  app.delete(
    '/api/admin/promotions/gift-cards/:id',
    {
      schema: {
        tags: admin,
        summary: 'Delete a gift card never used (CONFLICT once it was: pause it)',
        params: IdParam,
        response: { 200: S.ok() },
        errors: ['GIFT_CARD_NOT_FOUND', 'CONFLICT'],
      },
    },
    async ({ params }) => {
      await promotions.deleteCard(pathId(params.id));
      return done;
    },
  );
}

/** Admin: the store products that sell a gift card. */
function giftProductRoutes({ app, promotions }: PromotionRoutes): void {
  app.get(
    '/api/admin/promotions/gift-card-products',
    {
      schema: { tags: admin, summary: 'Store products that sell a gift card, and what a unit puts on it', response: { 200: Type.Array(GiftProductRow) } },
    },
    async () => (await promotions.giftProducts()).map((p) => ({ productID: String(p.productId), amount: formatMoney(p.amount) })),
  );
  app.post(
    '/api/admin/promotions/gift-card-products',
    {
      schema: {
        tags: admin,
        summary: 'Make a store product sell a gift card',
        description:
          'Each unit bought issues a card of `amount` owned by the buyer (listed at `GET /api/users/<id>/gift-cards`); ' +
          'a refund of the order voids what is left on it.',
        body: GiftProductBody,
        response: { 200: S.ok() },
        errors: ['PRODUCT_NOT_FOUND'],
      },
    },
    async ({ body }) => {
      await promotions.setGiftProduct(body.productID, cents(body.amount, 'amount', 1));
      return done;
    },
  );
  app.delete(
    '/api/admin/promotions/gift-card-products/:id',
    {
      schema: { tags: admin, summary: 'The product no longer sells a gift card', params: IdParam, response: { 200: S.ok() }, errors: ['PRODUCT_NOT_FOUND'] },
    },
    async ({ params }) => {
      await promotions.removeGiftProduct(pathId(params.id));
      return done;
    },
  );
}

/** Admin: sales. */
function saleRoutes({ app, promotions, tz }: PromotionRoutes): void {
  app.get(
    '/api/admin/promotions/sales',
    {
      schema: { tags: admin, summary: 'Sales, newest first, with what they took off and brought', response: { 200: Type.Array(SaleRow) } },
    },
    async () => {
      const figures = await promotions.figures('sale');
      const at = now();
      return (await promotions.sales()).map((s) => saleRow(s, figures.get(s.id), tz(), at));
    },
  );
  const oneSale = async (id: number) => saleRow(await promotions.requireSale(id), (await promotions.figures('sale')).get(id), tz(), now());
  const SALE_RULE =
    'While it runs, each product it covers costs the lower of its own price (its discountedPrice while that runs) ' +
    "and its list price less the sale's percent: they never stack. The listing's computed fields, the storefront and both checkouts " +
    'show and charge that price. A change reaches other instances within plugins.promotions.cacheSeconds.';
  app.post(
    '/api/admin/promotions/sales',
    {
      schema: { tags: admin, summary: 'Create a sale', description: SALE_RULE, body: SaleBody, response: { 201: SaleRow } },
    },
    async ({ body }, reply) => {
      const input = saleInput(body, tz());
      const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
      const sale = await promotions.createSale({ categoryIds: '[]', isActive: true, ...given } as Parameters<DbPromotionsService['createSale']>[0]);
      return reply.code(201).send(saleRow(sale, undefined, tz(), now()));
    },
  );
  app.get(
    '/api/admin/promotions/sales/:id',
    {
      schema: { tags: admin, summary: 'One sale', params: IdParam, response: { 200: SaleRow }, errors: ['SALE_NOT_FOUND'] },
    },
    async ({ params }) => oneSale(pathId(params.id)),
  );
  app.patch(
    '/api/admin/promotions/sales/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change or pause a sale (`isActive`)',
        description: SALE_RULE,
        params: IdParam,
        body: SalePatchBody,
        response: { 200: SaleRow },
        errors: ['SALE_NOT_FOUND'],
      },
    },
    async ({ params, body }) => {
      const sale = await promotions.updateSale(pathId(params.id), saleInput(body, tz()));
      return oneSale(sale.id);
    },
  );
  app.delete(
    '/api/admin/promotions/sales/:id',
    {
      schema: { tags: admin, summary: 'Delete a sale', params: IdParam, response: { 200: S.ok() }, errors: ['SALE_NOT_FOUND'] },
    },
    async ({ params }) => {
      await promotions.deleteSale(pathId(params.id));
      return done;
    },
  );
}
