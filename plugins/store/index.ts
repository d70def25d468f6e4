import { Type } from '@sinclair/typebox';
import { Counter } from 'prom-client';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { usersRef } from '../users/contract.ts';
import { catalogueSection, ordersSection } from './console.ts';
import { storeRef, storeSettings } from './contract.ts';
import { entities } from './entities.ts';
import { ProductImages, imageOptions } from './images.ts';
import { migrations } from './migrations/index.ts';
import { storeRoutes } from './routes.ts';
import { DbStoreService } from './service.ts';

export default defineFeature({
  name: 'store',
  requires: [usersRef, creditsRef],
  options: Type.Object({ images: imageOptions }),
  entities,
  migrations,
  settings: storeSettings,
  events: {
    'store.order.completed': 'An order completed: a purchase paid from the balance or with money.',
    'store.order.refunded': 'An order was refunded.',
  },
  errors: {
    PRODUCT_NOT_FOUND: 404, CATEGORY_NOT_FOUND: 404, ORDER_NOT_FOUND: 404, INVALID_QUANTITY: 400, INSUFFICIENT_BALANCE: 400,
    OUT_OF_STOCK: 400, INVALID_VARIABLE: 400, REQUIRED_PRODUCT: 400, REQUIRED_LINKED_ACCOUNT: 400, DOWNGRADE_NOT_ALLOWED: 400,
    ACCOUNT_REQUIRED: 400,
    // Thrown by a price adjuster (the promotions feature) for a code sent with a buy.
    PROMOTION_INVALID: 400, PROMOTION_USED_UP: 409,
  },
  async register(app, { db, events, services, settings, metrics, options }) {
    const users = services.get(usersRef);
    const store = new DbStoreService({ db, events, settings, users, credits: services.get(creditsRef), audit: services.get(auditRef) });
    services.provide(storeRef, store);
    const completed = new Counter({ name: 'store_orders_total', help: 'Completed orders by type (credit: paid from the balance, payment: real money).',
      labelNames: ['type'] as const, registers: [metrics] });
    events.on('store.order.completed', (e) => completed.inc({ type: e.type }));
    storeRoutes(app, store, users, settings);
    const images = new ProductImages(options.images, db);
    images.routes(app);
    return { store, images };
  },
  console: [catalogueSection, ordersSection],
});
