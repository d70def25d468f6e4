/**
 * The bare baseline server: plain Fastify and the database driver, serving each scenario's route
 * on the database the server was seeded on (DATABASE_URL, PORT). It checks the API key as the
 * server does (a hash compared, no statement), except on a route answered on a staff session
 * (`session`: the dashboard checks its cookie), and does the same database work by hand.
 * Started by bench/run.ts in a process of its own, pinned like the server.
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import formbody from '@fastify/formbody';
import { BaseDb } from './base-db.ts';
import { BaseWebhooks } from './base-webhooks.ts';
import { loadBaselineRoutes, loadScenarios } from './scenarios.ts';

const db = new BaseDb(process.env.DATABASE_URL!);
const keyHash = createHash('sha256').update(process.env.API_KEY!).digest('hex');
const app = Fastify({ logger: false });
await app.register(formbody);
app.addHook('onRequest', async (request, reply) => {
  if ((request.routeOptions.config as { session?: boolean }).session) return;
  const key = request.headers['x-api-key'];
  if (typeof key !== 'string' || createHash('sha256').update(key).digest('hex') !== keyHash) {
    return reply.code(401).send({ status: false, error: 'INVALID_API_KEY', message: 'The API key is missing or wrong.' });
  }
});
for (const baseline of [...(await loadScenarios()).map((s) => s.baseline), ...(await loadBaselineRoutes())]) {
  app.route({
    method: baseline.method,
    url: baseline.url,
    config: { session: baseline.session },
    handler: (request, reply) => baseline.handler(db, request, reply),
  });
}
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
