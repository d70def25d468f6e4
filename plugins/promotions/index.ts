import { auditRef } from '../../core/audit.ts';
import { Type } from '@sinclair/typebox';
import { everyRound } from '../../core/background.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { catalogueRef, checkoutRef, ordersRef } from '../store/contract.ts';
import { usersRef } from '../users/contract.ts';
import { PromotionsInBuy } from './buy.ts';
import { promotionsSections } from './console.ts';
import { promotionsRef, promotionsSettings } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { promotionsRoutes } from './routes.ts';
import { DbPromotionsService } from './service.ts';
import { WrongCodes } from './wrong-codes.ts';

const limit = (max: number, windowSeconds: number) =>
  Type.Object(
    {
      /** Wrong codes per window; 0 = no limit. */
      max: Type.Integer({ minimum: 0, default: max }),
      windowSeconds: Type.Integer({ minimum: 1, default: windowSeconds }),
    },
    { default: {} },
  );

const options = Type.Object({
  /** Sales and gift-card products are read into memory this often (and at once after a change on this instance). */
  cacheSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 5 }),
  /** Characters of a gift card code the server makes. */
  codeLength: Type.Integer({ minimum: 8, maximum: 64, default: 16 }),
  /** Wrong coupon and gift card codes a client may send before every code is refused for the rest of the window (wrong-codes.ts). */
  wrongCodes: Type.Object({ perAddress: limit(10, 600), perAccount: limit(10, 600), perApiClient: limit(100, 600) }, { default: {} }),
});

export default defineFeature({
  name: 'promotions',
  requires: [catalogueRef, checkoutRef, ordersRef, usersRef, creditsRef],
  options,
  entities,
  migrations,
  settings: promotionsSettings,
  errors: { COUPON_NOT_FOUND: 404, GIFT_CARD_NOT_FOUND: 404, SALE_NOT_FOUND: 404 },
  async register(app, { db, events, services, settings, options: opts, log }) {
    const wrongCodes = new WrongCodes(db, opts.wrongCodes);
    // What promotions do during a buy enters it by the checkout's one door; a refund gives it back.
    const inBuy = new PromotionsInBuy({ db, codeLength: opts.codeLength, wrongCodes });
    services.get(checkoutRef).addParticipant(inBuy);
    events.onCommitting('store.order.refunded', (e) => inBuy.refunded(e.orderId, e.userId));
    events.onCommitting('store.order.cleared', (e) => inBuy.ordersCleared(e.orderIds));
    const promotions = new DbPromotionsService({
      db,
      settings,
      catalogue: services.get(catalogueRef),
      orders: services.get(ordersRef),
      credits: services.get(creditsRef),
      inBuy,
      codeLength: opts.codeLength,
      audit: services.get(auditRef),
    });
    services.provide(promotionsRef, promotions);
    app.addHook('onReady', () => inBuy.reload());
    everyRound(app, log, 'promotions cache', opts.cacheSeconds * 1000, () => inBuy.reload());
    await promotionsRoutes(app, promotions, services.get(usersRef), settings, wrongCodes);
    return promotions;
  },
  console: promotionsSections,
});
