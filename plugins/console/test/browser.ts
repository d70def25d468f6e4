/**
 * The console's browser-test helpers: a staff page and a purchase with a command; the browser,
 * the server, roles, sign-in and notices come from test/browser.ts.
 */
import type { FastifyInstance } from 'fastify';
import { created, makeCategory, makeProduct } from '../../../test/fixtures.ts';
import { call, type TestLike } from '../../../test/helper.ts';
import { browse, grant, register, role, serve } from '../../../test/browser.ts';

export {
  browse,
  consoleSignIn as signIn,
  grant,
  hasChromium,
  notice,
  PASSWORD,
  register,
  role,
  screenshot,
  serve,
  signInByForm,
  skipReason,
} from '../../../test/browser.ts';

/**
 * A server with an admin (Alice) and a support helper (Bob), and a browser page that accepts
 * every confirmation; nobody signed in yet.
 */
export async function staffBrowser(t: TestLike, env: Record<string, string> = {}) {
  const { app, base } = await serve(t, {}, env);
  const adminId = await register(app, 'Alice');
  const helperId = await register(app, 'Bob');
  await grant(app, adminId, await role(app, 'Admin'));
  await grant(app, helperId, await role(app, 'Support'));
  const page = await (await browse(t)).newPage();
  page.on('dialog', (dialog) => {
    void dialog.accept();
  });
  return { app, base, page, adminId, helperId, menu: page.getByRole('navigation', { name: 'Sections' }) };
}

/**
 * Steve (registered) buys VIP for 5.00 with credits given him first; VIP runs `command` on the game
 * server Lobby at purchase. The server (with its token), Steve's id and the order's id.
 */
export async function purchaseWithCommand(app: FastifyInstance, command: string) {
  const steveId = await register(app, 'Steve');
  const server = await created(app, '/api/admin/delivery/servers', { name: 'Lobby' }, 'json');
  const productId = await makeProduct(app, { name: 'VIP', categoryID: String(await makeCategory(app, { name: 'Ranks' })), price: '5.00' });
  await created(app, `/api/admin/store/products/${productId}/commands`, { serverID: String(server.id), command, trigger: 'purchase' }, 'json');
  await call(app, '/api/credits/add', { body: { target_username: 'Steve', amount: '5.00' } });
  const bought = await call(app, '/api/store/buy', { body: { userID: String(steveId), products: [String(productId)] } });
  if (bought.statusCode !== 200) throw new Error(`buy: ${bought.body}`);
  const orderId: string = (await call(app, `/api/users/${steveId}/orders`)).json()[0].id;
  return { server, steveId, orderId };
}
