/** The server started by `npm start` (core/server.js): build the app, listen, and close gracefully on SIGTERM/SIGINT. */
import { buildApp } from './app.ts';
import { ConfigError } from './config.ts';
import { memoryReducingGc, reclaimWhenIdle } from './idle-reclaim.ts';

let app: Awaited<ReturnType<typeof buildApp>>;
try {
  app = await buildApp();
  // Features start here (a wrong TOTP_ENCRYPTION_KEY, say): their setting errors are one line too.
  await app.ready();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`Cannot start: ${err.message}`);
    process.exit(1);
  }
  throw err;
}
const { host, port, shutdownGraceMs, idleReclaimSeconds } = app.appConfig.server;
try {
  await app.listen({ host, port });
} catch (err) {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'EADDRINUSE'
      ? `${host}:${port} is already in use. Set PORT (or server.port) to a free port, or stop the process that holds it.`
      : code === 'EACCES'
        ? `no permission to listen on ${host}:${port}. Use a port above 1023 (PORT or server.port).`
        : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
          ? `${host} is not an address of this machine. Set HOST (or server.host), e.g. 127.0.0.1 or 0.0.0.0.`
          : undefined;
  if (!why) throw err;
  console.error(`Cannot start: ${why}`);
  await app.close();
  process.exit(1);
}
if (!process.env.API_KEY && !(await app.apiKeys.list()).some((k) => !k.revokedAt)) {
  app.log.warn('No API key exists yet, so every /api call is refused: run `npm run keys -- create admin --admin` or set API_KEY.');
}
const gc = idleReclaimSeconds > 0 ? memoryReducingGc() : undefined;
if (gc) reclaimWhenIdle(gc, idleReclaimSeconds * 1000, (r) => app.log.debug(r, 'memory handed back while idle'));
else if (idleReclaimSeconds > 0)
  app.log.warn(
    'server.idleReclaimSeconds needs node --expose-gc on the command line (npm start and the image pass it): ' + 'memory is not handed back while idle.',
  );

let closing = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    // In-flight requests finish; a hung one cannot keep the process alive past the grace period.
    setTimeout(() => process.exit(1), shutdownGraceMs).unref();
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
