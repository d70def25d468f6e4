/** What a feature's register function gets from the host: the console's sections get it too (core/console.ts). */
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Database } from './db.ts';
import type { EventBus } from './events.ts';
import type { OutboundPolicy } from './outbound.ts';
import type { ServiceRegistry } from './registry.ts';
import type { SettingsService } from './settings.ts';

export interface FeatureContext<Options> {
  /** The feature's own options (`plugins.<name>` in config), validated and with defaults. */
  options: Options;
  services: ServiceRegistry;
  events: EventBus;
  db: Database;
  settings: SettingsService;
  log: FastifyBaseLogger;
  /** The environment the server was built with: where secrets come from. */
  env: NodeJS.ProcessEnv;
  /** Where the feature's business metrics go (served at `/metrics` when metrics are enabled). */
  metrics: Registry;
  /** Which addresses an address given by an admin or a player (a webhook) may reach; its `lookup` checks at connect time. */
  outbound: OutboundPolicy;
}
