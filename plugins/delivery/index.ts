import { defineFeature } from '../../core/features.ts';
import { storeRef } from '../store/contract.ts';
import { usersRef } from '../users/contract.ts';
import { deliveryRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { deliveryRoutes } from './routes.ts';
import { DbDeliveryService } from './service.ts';

export default defineFeature({
  name: 'delivery',
  requires: [storeRef, usersRef],
  entities,
  migrations,
  errors: { DELIVERY_SERVER_NOT_FOUND: 404, DELIVERY_COMMAND_NOT_FOUND: 404 },
  async register(app, { db, events, services, settings }) {
    const delivery = new DbDeliveryService({ db, settings, store: services.get(storeRef), users: services.get(usersRef) });
    services.provide(deliveryRef, delivery);
    // Inside the buy's transaction: a buy that rolls back leaves no command behind.
    events.onCommitting('store.order.completed', (order) => delivery.enqueue('purchase', order));
    await deliveryRoutes(app, delivery);
  },
});
