/**
 * The bare baseline server: plain Fastify and the database driver, serving each scenario's route
 * on the database the server was seeded on (DATABASE_URL, PORT). It checks the API key as the
 * server does (a hash compared, no statement), except on a route answered on a staff session
 * (`session`: the dashboard checks its cookie) or on a gateway's signed webhook (`raw`: its body
 * kept as bytes for the signature), and does the same database work by hand.
 * Started by bench/run.ts in a process of its own, pinned like the server.
 */
import { createHash } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import formbody from '@fastify/formbody';
import { BaseDb } from './base-db.ts';
import { BaseWebhooks } from './base-webhooks.ts';
import { loadBaselineRoutes, loadScenarios } from './scenarios.ts';

const db = new BaseDb(process.env.DATABASE_URL!);
const keyHash = createHash('sha256').update(process.env.API_KEY!).digest('hex');
const app = Fastify({ logger: false });
await app.register(formbody);
app.addHook('onRequest', async (request, reply) => {
  const config = request.routeOptions.config as { session?: boolean; raw?: boolean };
  if (config.session || config.raw) return;
  const key = request.headers['x-api-key'];
  if (typeof key !== 'string' || createHash('sha256').update(key).digest('hex') !== keyHash) {
    return reply.code(401).send({ status: false, error: 'INVALID_API_KEY', message: 'The API key is missing or wrong.' });
  }
});
const routes = [...(await loadScenarios()).map((s) => s.baseline), ...(await loadBaselineRoutes())];
const route = (on: FastifyInstance, baseline: (typeof routes)[number]) =>
  on.route({
    method: baseline.method,
    url: baseline.url,
    config: { session: baseline.session, raw: baseline.raw },
    handler: (request, reply) => baseline.handler(db, request, reply),
  });
for (const baseline of routes.filter((r) => !r.raw)) route(app, baseline);
await app.register(async (raw) => {
  raw.removeAllContentTypeParsers();
  raw.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  for (const baseline of routes.filter((r) => r.raw)) route(raw, baseline);
});
const webhooks = process.env.BENCH_BASE_WEBHOOKS === '1' ? new BaseWebhooks(db) : undefined;
webhooks?.start();
app.addHook('onClose', () => {
  webhooks?.stop();
  return db.close();
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => {
  app.close().then(() => process.exit(0));
});
console.log('ready');
