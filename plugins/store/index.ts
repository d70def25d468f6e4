import { Type } from '@sinclair/typebox';
import { Counter } from 'prom-client';
import { auditRef } from '../../core/audit.ts';
import { defineFeature } from '../../core/features.ts';
import { creditsRef } from '../credits/contract.ts';
import { usersRef } from '../users/contract.ts';
import { catalogueSection } from './console.ts';
import { DbCatalogue } from './catalogue.ts';
import { DbCheckout } from './checkout.ts';
import {
  catalogueRef,
  checkoutRef,
  ordersRef,
  storeRef,
  storeSettings,
  type StoreCatalogue,
  type StoreCheckout,
  type StoreOrders,
  type StoreService,
} from './contract.ts';
import { entities } from './entities.ts';
import { ProductImages, imageFolder, imageOptions } from './images.ts';
import { migrations } from './migrations/index.ts';
import { storeRoutes } from './routes.ts';
import { DbOrders } from './orders.ts';
import { ordersSection } from './orders-console.ts';

/** The three parts as one object (`storeRef`, for packages written before the split): each method its part's own, bound to it. */
function wholeStore(catalogue: StoreCatalogue, checkout: StoreCheckout, orders: StoreOrders): StoreService {
  const whole: Record<string, unknown> = {};
  for (const part of [catalogue, checkout, orders]) {
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(part))) {
      const method: unknown = Reflect.get(part, name);
      if (name !== 'constructor' && typeof method === 'function') whole[name] = method.bind(part);
    }
  }
  return whole as unknown as StoreService;
}

const options = Type.Object({ images: imageOptions });

/** What register hands the console sections: each takes the parts it shows. */
type Internals = { catalogue: DbCatalogue; orders: DbOrders; images: ProductImages };

export default defineFeature<typeof options, Internals>({
  name: 'store',
  requires: [usersRef, creditsRef],
  options,
  entities,
  migrations,
  settings: storeSettings,
  events: {
    'store.order.completed': 'An order completed: a purchase paid from the balance or with money.',
    'store.order.refunded': 'An order was refunded.',
    'store.order.cleared': 'Test orders were deleted (test mode cleared): their rows elsewhere go too.',
    'store.order.imported': 'An order another store took came in through an import (history and boards only).',
  },
  errors: {
    PRODUCT_NOT_FOUND: 404,
    CATEGORY_NOT_FOUND: 404,
    ORDER_NOT_FOUND: 404,
    INVALID_QUANTITY: 400,
    INSUFFICIENT_BALANCE: 400,
    OUT_OF_STOCK: 400,
    INVALID_VARIABLE: 400,
    REQUIRED_PRODUCT: 400,
    REQUIRED_LINKED_ACCOUNT: 400,
    DOWNGRADE_NOT_ALLOWED: 400,
    ACCOUNT_REQUIRED: 400,
    // Thrown by a buy's participant (the promotions feature) for a code sent with a buy.
    PROMOTION_INVALID: 400,
    PROMOTION_USED_UP: 409,
  },
  async register(app, { db, events, services, settings, metrics, options }) {
    const [users, credits, audit] = [services.get(usersRef), services.get(creditsRef), services.get(auditRef)];
    const catalogue = new DbCatalogue({ db, users, audit });
    const checkout = new DbCheckout({ db, events, settings, users, credits, catalogue });
    const orders = new DbOrders({ db, events, settings, users, credits, audit, catalogue });
    services.provide(catalogueRef, catalogue);
    services.provide(checkoutRef, checkout);
    services.provide(ordersRef, orders);
    services.provide(storeRef, wholeStore(catalogue, checkout, orders));
    const completed = new Counter({
      name: 'store_orders_total',
      help: 'Completed orders by type (credit: paid from the balance, payment: real money).',
      labelNames: ['type'] as const,
      registers: [metrics],
    });
    events.on('store.order.completed', (e) => completed.inc({ type: e.type }));
    storeRoutes(app, { catalogue, checkout, orders }, users, settings);
    const images = new ProductImages(options.images, db);
    images.routes(app);
    return { catalogue, orders, images };
  },
  console: [catalogueSection, ordersSection],
  // Product images travel with the archive; the tables are every one of entities (the default).
  archive: { folders: (opts, { databaseFile }) => ({ images: imageFolder(opts.images, databaseFile) }) },
});
