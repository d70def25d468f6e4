import { auditRef } from '../../core/audit.ts';
import { Gauge } from 'prom-client';
import { defineFeature } from '../../core/features.ts';
import { usersRef } from '../users/contract.ts';
import { supportSection } from './console.ts';
import { supportRef } from './contract.ts';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { supportRoutes } from './routes.ts';
import { DbSupportService } from './service.ts';

export default defineFeature({
  name: 'support',
  requires: [usersRef],
  entities,
  migrations,
  events: {
    'support.ticket.created': 'A ticket was opened.',
    'support.ticket.replied': 'A ticket was answered (isAdmin: by staff).',
    'support.ticket.closed': 'A ticket was closed.',
  },
  errors: { TICKET_NOT_FOUND: 404, TICKET_CLOSED: 400, CATEGORY_NOT_FOUND: 404, MESSAGE_NOT_FOUND: 404, ANSWER_NOT_FOUND: 404 },
  async register(app, { db, events, services, settings, metrics }) {
    const users = services.get(usersRef);
    const support = new DbSupportService(db, events, users, settings, services.get(auditRef));
    services.provide(supportRef, support);
    new Gauge({
      name: 'support_open_tickets',
      help: 'Tickets not closed (open, answered or awaiting staff).',
      registers: [metrics],
      // Counted when scraped, so the number is right whichever process changed a ticket.
      async collect() {
        this.set(await support.openTicketCount());
      },
    });
    await supportRoutes(app, support, users);
    return support;
  },
  console: [supportSection],
});
