/**
 * The delivery feature's console section: game servers (a new one's token shown once), the
 * commands each product runs on them, and the queue (redeliver, cancel).
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, idOf, type ConsolePage, type ConsolePages, type ConsoleSection, type ShownForm, sharedFigures } from '../../core/console.ts';
import { counted } from '../../core/format.ts';
import { toBool } from '../../core/schemas.ts';
import { catalogueRef, type StoreCatalogue } from '../store/contract.ts';
import { QUEUE_STATUSES, type CommandInput } from './contract.ts';
import { commandInput } from './routes.ts';
import { ChargebackBody, CreateCommandBody, CreateServerBody } from './schemas.ts';
import type { DbDeliveryService } from './service.ts';

const PER_PAGE = 50;

export const deliverySection: ConsoleSection<unknown, DbDeliveryService> = {
  id: 'delivery',
  title: 'Delivery',
  order: 60,
  pages(pages, ctx, delivery) {
    const store = ctx.services.get(catalogueRef);
    dashboardFigures(pages, delivery);
    overviewRoutes(pages, delivery);
    chargebackRoutes(pages, delivery);
    commandRoutes(pages, delivery, store);
  },
};

/** The dashboard's figures and what needs staff: the backlog, commands failed or stuck, servers gone silent. */
function dashboardFigures(pages: ConsolePages, delivery: DbDeliveryService): void {
  const health = sharedFigures(() => delivery.health());
  pages.dashboard(async () => {
    const { backlog, silentServers, silentMinutes } = await health();
    return [
      { label: 'commands waiting to be delivered', value: String(backlog), href: `${pages.base}?status=waiting` },
      { label: `active servers not seen for ${silentMinutes} minutes`, value: String(silentServers), href: pages.base },
    ];
  });
  pages.attention(async () => {
    const h = await health();
    return [
      {
        count: h.failed,
        text: `${counted(h.failed, 'command')} failed for good: redeliver or cancel ${h.failed === 1 ? 'it' : 'them'}`,
        href: `${pages.base}?status=failed`,
      },
      { count: h.stuck, text: `${counted(h.stuck, 'command')} waiting for more than ${h.stuckMinutes} minutes`, href: `${pages.base}?status=waiting` },
      { count: h.silentServers, text: `${counted(h.silentServers, 'active game server')} not seen for ${h.silentMinutes} minutes`, href: pages.base },
    ];
  });
}

/** The section's first page: game servers, a form for a new one, and the queue filtered by status, a page at a time. */
async function overviewPage(
  pages: ConsolePages,
  delivery: DbDeliveryService,
  query: Record<string, string>,
  server?: ShownForm,
  notice?: string,
): Promise<ConsolePage> {
  const status = (QUEUE_STATUSES as readonly string[]).includes(query.status ?? '') ? query.status : undefined;
  const page = /^[1-9][0-9]{0,6}$/.test(query.page ?? '') ? Number(query.page) : 1;
  const [servers, queue] = await Promise.all([delivery.listServers(), delivery.listQueue({ status, page, perPage: PER_PAGE })]);
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const link = (p: number) => `${pages.base}?${new URLSearchParams({ ...(status ? { status } : {}), page: String(p) })}`;
  return {
    title: 'Delivery',
    notice,
    status: server ? 422 : 200,
    blocks: [
      {
        kind: 'links',
        items: [{ label: 'Chargeback commands: what runs when a payment is refunded or disputed at its gateway', href: `${pages.base}/chargeback` }],
      },
      {
        kind: 'table',
        caption: 'Game servers',
        empty: 'No game server yet.',
        columns: [
          { key: 'id', label: 'ID', numeric: true },
          { key: 'name', label: 'Name' },
          { key: 'active', label: 'Active' },
          { key: 'seen', label: 'Last seen' },
        ],
        rows: servers.map((s) => ({ id: s.id, name: s.name, active: s.isActive ? 'yes' : 'no', seen: s.lastSeenDate ?? 'never' })),
      },
      {
        kind: 'form',
        id: 'new-server',
        title: 'New game server',
        action: `${pages.base}/servers`,
        submit: 'Create server',
        values: server?.values ?? { isActive: 'true' },
        errors: server?.errors,
        fields: [
          { name: 'name', label: 'Name', required: true },
          { name: 'isActive', label: 'Active', type: 'checkbox' },
        ],
      },
      {
        kind: 'form',
        id: 'queue-filter',
        title: 'Queue',
        method: 'get',
        action: pages.base,
        submit: 'Show',
        values: { status: status ?? '' },
        fields: [
          { name: 'status', label: 'Status', type: 'select', options: [{ value: '', label: 'any' }, ...QUEUE_STATUSES.map((s) => ({ value: s, label: s }))] },
        ],
      },
      {
        kind: 'table',
        caption: 'Queued commands, newest first',
        empty: 'Nothing queued.',
        columns: [
          { key: 'id', label: 'ID', numeric: true },
          { key: 'server', label: 'Server' },
          { key: 'player', label: 'Player' },
          { key: 'command', label: 'Command' },
          { key: 'status', label: 'Status' },
          { key: 'tries', label: 'Tries', numeric: true },
          { key: 'action', label: 'Action' },
        ],
        rows: queue.map((q) => ({
          id: q.id,
          server: names.get(q.serverID) ?? q.serverID,
          player: q.username,
          command: q.command,
          status: q.lastError ? `${q.status}: ${q.lastError}` : q.status,
          tries: q.tries,
          action:
            q.status === 'waiting' || q.status === 'claimed'
              ? { action: `${pages.base}/queue/${q.id}/cancel`, label: `Cancel ${q.id}`, confirm: 'Cancel this command?' }
              : { action: `${pages.base}/queue/${q.id}/redeliver`, label: `Redeliver ${q.id}` },
        })),
        next: queue.length === PER_PAGE ? link(page + 1) : undefined,
        first: page > 1 ? link(1) : undefined,
      },
    ],
  };
}

/** The first page's actions: a new game server (its token shown once), and a queued command redelivered or cancelled. */
function overviewRoutes(pages: ConsolePages, delivery: DbDeliveryService): void {
  pages.get('', async ({ query }) => overviewPage(pages, delivery, query));

  pages.post(
    '/servers',
    async ({ body, invalid, form }) => {
      const values = { ...form, isActive: toBool(form.isActive) ? 'true' : 'false' };
      if (invalid) return overviewPage(pages, delivery, {}, { values, errors: invalid });
      const b = body as Static<typeof CreateServerBody>;
      try {
        const created = await delivery.createServer({ name: b.name, isActive: toBool(values.isActive) });
        return overviewPage(pages, delivery, {}, undefined, `Server ${created.name} created (ID ${created.id}). Its token, shown only now: ${created.token}`);
      } catch (err) {
        return overviewPage(pages, delivery, {}, { values, errors: errorsFor(err, ['name']) });
      }
    },
    { body: CreateServerBody },
  );

  for (const action of ['redeliver', 'cancel'] as const) {
    pages.post(`/queue/:id/${action}`, async ({ params }) => {
      const row = await delivery[action](/^[0-9]{1,15}$/.test(params.id!) ? Number(params.id) : 0);
      return { redirect: pages.base, notice: `Command ${row.id} is ${row.status}.` };
    });
  }
}

/** A product's commands: what runs on which game server when it is bought, its role expires or it is refunded. */
async function commandsPage(
  pages: ConsolePages,
  delivery: DbDeliveryService,
  store: StoreCatalogue,
  productId: number,
  add?: ShownForm,
  notice?: string,
): Promise<ConsolePage> {
  const name = await store.productName(productId);
  const [commands, servers] = await Promise.all([delivery.listCommands(productId), delivery.listServers()]);
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const product = pages.href('catalogue', `/products/${productId}`);
  return {
    title: `Commands of ${name ?? `product ${productId}`}`,
    notice,
    status: add ? 422 : 200,
    blocks: [
      ...(product ? [{ kind: 'links' as const, items: [{ label: `Back to ${name ?? 'the product'}`, href: product }] }] : []),
      {
        kind: 'table',
        caption: 'Commands',
        empty: 'This product runs no command.',
        columns: [
          { key: 'server', label: 'Server' },
          { key: 'trigger', label: 'When' },
          { key: 'command', label: 'Command' },
          { key: 'online', label: 'Player online' },
          { key: 'unit', label: 'Per unit' },
          { key: 'delete', label: 'Delete' },
        ],
        rows: commands.map((c) => ({
          server: names.get(c.serverID) ?? c.serverID,
          trigger: c.trigger,
          command: c.command,
          online: c.requireOnline ? 'required' : 'no',
          unit: c.perUnit ? 'yes' : 'no',
          delete: { action: `${pages.base}/products/${productId}/commands/${c.id}/delete`, label: `Delete command ${c.id}`, confirm: 'Delete this command?' },
        })),
      },
      {
        kind: 'form',
        id: 'new-command',
        title: 'Add a command',
        action: `${pages.base}/products/${productId}/commands`,
        submit: 'Add command',
        values: add?.values ?? { trigger: 'purchase' },
        errors: add?.errors,
        fields: [
          { name: 'serverID', label: 'Game server', type: 'select', required: true, options: servers.map((s) => ({ value: s.id, label: s.name })) },
          {
            name: 'trigger',
            label: 'When',
            type: 'select',
            options: [
              { value: 'purchase', label: 'on purchase' },
              { value: 'expiry', label: 'when the role expires' },
              { value: 'refund', label: 'on refund' },
              { value: 'renewal', label: "on a subscription's renewal" },
            ],
          },
          {
            name: 'command',
            label: 'Command',
            required: true,
            hint: 'Placeholders: {username} {userID} {quantity} {orderID} {productID} {productName} {chatUserID} {var:<name>}',
          },
          { name: 'requireOnline', label: 'Only while the player is online', type: 'checkbox' },
          { name: 'perUnit', label: 'Once per unit bought', type: 'checkbox' },
        ],
      },
    ],
  };
}

/** The commands every chargeback runs. */
async function chargebackPage(pages: ConsolePages, delivery: DbDeliveryService, add?: ShownForm): Promise<ConsolePage> {
  const [commands, servers] = await Promise.all([delivery.chargebackCommands(), delivery.listServers()]);
  const names = new Map(servers.map((s) => [s.id, s.name]));
  return {
    title: 'Chargeback commands',
    status: add ? 422 : 200,
    blocks: [
      {
        kind: 'text',
        text:
          'When a payment is refunded or disputed at its gateway, its credits are taken back as far as the balance allows, the player ' +
          'is flagged on their page, and these commands are queued for them on each game server (a ban, a rank removed).',
      },
      {
        kind: 'table',
        caption: 'Run on every chargeback',
        empty: 'No command runs on a chargeback.',
        columns: [
          { key: 'server', label: 'Server' },
          { key: 'command', label: 'Command' },
          { key: 'delete', label: 'Delete' },
        ],
        rows: commands.map((c) => ({
          server: names.get(c.serverID) ?? c.serverID,
          command: c.command,
          delete: { action: `${pages.base}/chargeback/${c.id}/delete`, label: `Delete command ${c.id}`, confirm: 'Delete this chargeback command?' },
        })),
      },
      {
        kind: 'form',
        id: 'new-chargeback-command',
        title: 'Add a chargeback command',
        action: `${pages.base}/chargeback`,
        submit: 'Add command',
        values: add?.values,
        errors: add?.errors,
        fields: [
          {
            name: 'serverID',
            label: 'Game server',
            type: 'select',
            required: true,
            placeholder: 'Choose a server',
            options: servers.map((s) => ({ value: s.id, label: s.name })),
          },
          {
            name: 'command',
            label: 'Command',
            required: true,
            hint: 'Placeholders: {username} {userID} {orderID} {chatUserID}. E.g. ban {username} chargeback',
          },
        ],
      },
    ],
  };
}

/** The chargeback commands' page, added and deleted. */
function chargebackRoutes(pages: ConsolePages, delivery: DbDeliveryService): void {
  pages.get('/chargeback', async () => chargebackPage(pages, delivery));
  pages.post(
    '/chargeback',
    async ({ body, invalid, form }) => {
      if (invalid) return chargebackPage(pages, delivery, { values: form, errors: invalid });
      const b = body as Static<typeof ChargebackBody>;
      try {
        await delivery.addChargebackCommand(Number(b.serverID), b.command);
      } catch (err) {
        const errors = errorsFor(err, ['serverID', 'command'], { DELIVERY_SERVER_NOT_FOUND: 'serverID' });
        return chargebackPage(pages, delivery, { values: form, errors });
      }
      return { redirect: `${pages.base}/chargeback`, notice: `Chargebacks now run "${b.command}".` };
    },
    { body: ChargebackBody },
  );
  pages.post('/chargeback/:id/delete', async ({ params }) => {
    await delivery.deleteChargebackCommand(idOf(params.id));
    return { redirect: `${pages.base}/chargeback`, notice: 'Chargeback command deleted.' };
  });
}

/** A product's commands' page, added and deleted. */
function commandRoutes(pages: ConsolePages, delivery: DbDeliveryService, store: StoreCatalogue): void {
  const productId = (id: string | undefined) => (/^[0-9]{1,15}$/.test(id ?? '') ? Number(id) : 0);
  pages.get('/products/:id', async ({ params }) => commandsPage(pages, delivery, store, productId(params.id)));

  pages.post(
    '/products/:id/commands',
    async ({ params, body, invalid, form }) => {
      const id = productId(params.id);
      if (invalid) return commandsPage(pages, delivery, store, id, { values: form, errors: invalid });
      try {
        const input = {
          ...commandInput(body as Static<typeof CreateCommandBody>),
          requireOnline: toBool(form.requireOnline),
          perUnit: toBool(form.perUnit),
        } as CommandInput;
        await delivery.createCommand(id, input);
        return { redirect: `${pages.base}/products/${id}`, notice: 'Command added.' };
      } catch (err) {
        const errors = errorsFor(err, Object.keys(CreateCommandBody.properties), { DELIVERY_SERVER_NOT_FOUND: 'serverID' });
        return commandsPage(pages, delivery, store, id, { values: form, errors });
      }
    },
    { body: CreateCommandBody },
  );

  pages.post('/products/:id/commands/:commandId/delete', async ({ params }) => {
    const id = productId(params.id);
    await delivery.deleteCommand(id, productId(params.commandId));
    return { redirect: `${pages.base}/products/${id}`, notice: 'Command deleted.' };
  });
}
