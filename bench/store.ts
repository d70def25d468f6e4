/**
 * The store's hot paths: the listing the game plugin renders its shop from (20 categories of 50
 * products), and the buy. The baselines run the same statements by hand: the listing's three
 * reads nested and shaped into the same JSON; the buy's reads, order, debit, ledger, stock take
 * and delivery lookup in one transaction, and its events when a webhook endpoint subscribes to them.
 * A running sale and a coupon are priced and recorded as the server's promotions do (bench/store-promotions.ts).
 */
import { now, PERMANENT } from '../core/format.ts';
import { BaseDb, type OutboxEvent, type Row } from './base-db.ts';
import { Api, money, type BenchRequest, type Scenario } from './scenario.ts';
import {
  bestSale,
  COUPON,
  COUPON_PLAYER,
  couponOff,
  judging,
  Limited,
  playerFirst,
  type PricedLine,
  promotionRows,
  Refused,
  runningSales,
  type Taken,
  useCoupon,
  usePlayer,
} from './store-promotions.ts';

const BUYERS = 50;

/**
 * A catalogue as a real shop has it: top-level categories each with a subcategory, products with
 * descriptions, some discounted, some with limited stock, some with variables, and a few inactive.
 */
export async function seedCatalogue(api: Api, categories: number, perCategory: number): Promise<{ categoryIds: string[]; productIds: string[] }> {
  const categoryIds: string[] = [];
  const productIds: string[] = [];
  for (let c = 0; c < categories; c++) {
    // Every other category sits under the one before, so the tree is nested, not flat.
    const parentID = c % 2 ? await api.create('/api/admin/store/categories', { name: `Group ${c}`, priority: c }) : '0';
    const categoryID = await api.create('/api/admin/store/categories', { name: `Category ${c}`, parentID, priority: c, gameItem: 'CHEST' });
    categoryIds.push(categoryID);
    await Api.batched(perCategory, 25, async (p) => {
      productIds[c * perCategory + p] = await api.create('/api/admin/store/products', {
        categoryID,
        name: `Product ${c}-${p}`,
        price: `${1 + (p % 40)}.99`,
        priority: p,
        details: `<p>Product ${p} of category ${c}: a <b>fine</b> item for your adventures.</p>`,
        gameTitle: `&6Product ${p}`,
        gameDescription: 'Line one\nLine two',
        gameItem: 'DIAMOND',
        ...(p % 3 === 0 ? { discountedPrice: '0.99' } : {}),
        ...(p % 4 === 0 ? { stock: 1000 } : {}),
        ...(p % 5 === 0 ? { variables: [{ name: 'server', required: true, values: ['eu', 'na'] }] } : {}),
        ...(p % 10 === 9 ? { isActive: false } : {}),
        ...(p % 8 === 1 ? { isFeaturedProduct: true } : {}),
      });
    });
  }
  return { categoryIds, productIds };
}

/** A discount counts while it has no end date or has not reached it. */
export const liveDiscount = (p: Row, at: string) => Number(p.discounted_price) > 0 && (p.discount_expiry_date === PERMANENT || p.discount_expiry_date > at);

// ---- listing

async function listingHandler(db: BaseDb) {
  const categories = await db.all(
    'select id, parent_id, name, slug, image_id, image_type, priority, game_status, game_title, game_description, game_item, is_active from store_categories ' +
      'where is_active = 1 order by priority, id',
  );
  const products = await db.all(
    'select id, category_id, give_role_id, name, image_id, image_type, details, price, discounted_price, discount_expiry_date, duration, stock, priority, ' +
      'is_featured, game_status, game_title, game_description, game_item, is_active, creation_date from store_products where is_active = 1 order by ' +
      'priority, id',
  );
  const variables = await db.all(
    'select product_id, name, `required`, allowed_values from store_product_variables where product_id in (select id from store_products where is_active = ' +
      '1) order by product_id, `position`',
  );
  const at = now();
  const varsOf = new Map<number, object[]>();
  for (const v of variables) {
    const list = varsOf.get(Number(v.product_id)) ?? [];
    list.push({ name: v.name, required: String(v.required), values: JSON.parse(v.allowed_values) });
    varsOf.set(Number(v.product_id), list);
  }
  const nodes = new Map<number, { subcategories: object[]; products: object[] } & Record<string, unknown>>();
  for (const c of categories) {
    nodes.set(Number(c.id), {
      id: String(c.id),
      parentID: String(c.parent_id),
      name: c.name,
      slug: c.slug,
      imageID: c.image_id,
      imageType: c.image_type,
      priority: String(c.priority),
      gameStatus: String(c.game_status),
      gameTitle: c.game_title,
      gameDescription: c.game_description,
      gameItem: c.game_item,
      isActive: String(c.is_active),
      gameItemModelID: '0',
      isCumulative: '0',
      subcategories: [],
      products: [],
    });
  }
  const roots: object[] = [];
  for (const c of categories) (Number(c.parent_id) === 0 ? roots : nodes.get(Number(c.parent_id))?.subcategories)?.push(nodes.get(Number(c.id))!);
  for (const p of products) {
    const price = Number(p.price);
    const total = liveDiscount(p, at) ? Number(p.discounted_price) : price;
    nodes.get(Number(p.category_id))?.products.push({
      id: String(p.id),
      categoryID: String(p.category_id),
      giveRoleID: String(p.give_role_id),
      name: p.name,
      imageID: p.image_id,
      imageType: p.image_type,
      details: p.details,
      price: money(price),
      discountedPrice: money(Number(p.discounted_price)),
      discountExpiryDate: p.discount_expiry_date,
      duration: String(p.duration),
      stock: String(p.stock),
      priority: String(p.priority),
      isFeaturedProduct: String(p.is_featured),
      gameStatus: String(p.game_status),
      gameTitle: p.game_title,
      gameDescription: p.game_description,
      gameItem: p.game_item,
      isActive: String(p.is_active),
      creationDate: p.creation_date,
      gameItemModelID: '0',
      requireOnlyOneProduct: '0',
      variables: varsOf.get(Number(p.id)) ?? [],
      total: total / 100,
      originalPrice: price / 100,
      discount: (price - total) / 100,
      discountPercent: Math.round(((price - total) * 100) / price),
      restricted: false,
      totalFormatted: `${money(total)} USD`,
      originalPriceFormatted: `${money(price)} USD`,
    });
  }
  return { categories: roots };
}

// ---- buy: many buyers, each buying a stock-limited product and an unlimited one in one order

async function seedBuyers(api: Api): Promise<BenchRequest[]> {
  const categoryID = await api.create('/api/admin/store/categories', { name: 'Shop' });
  const limited = await api.create('/api/admin/store/products', { categoryID, name: 'Limited', price: '2.50', stock: 100_000_000 });
  const unlimited = await api.create('/api/admin/store/products', {
    categoryID,
    name: 'Kit',
    price: '1.00',
    discountedPrice: '0.75',
    variables: [{ name: 'server', required: true, values: ['eu', 'na'] }],
  });
  const ids: string[] = [];
  await Api.batched(BUYERS, 10, async (i) => {
    ids[i] = await api.player(3000 + i, `buyer${i}`, 100_000_000_00);
  });
  return ids.map((userID) => ({
    method: 'POST',
    path: '/api/store/buy',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      userID,
      products: [
        { id: limited, quantity: 2 },
        { id: unlimited, variables: { server: 'eu' } },
      ],
    }),
  }));
}

interface BuyBody {
  userID: string;
  products: { id: string; quantity?: number; variables?: Record<string, string> }[];
  coupon?: string;
}

type Sales = Awaited<ReturnType<typeof runningSales>>;

const BUY_USER = 'select id, username from users_accounts where id = ?';
const BUY_CATEGORIES = 'select id, parent_id, is_active from store_categories';
const BUY_PRODUCTS = (n: number) =>
  `select id, category_id, name, price, discounted_price, discount_expiry_date, stock from store_products where id in ` +
  `(${placeholders(n)}) and is_active = 1`;
const BUY_VARIABLES = (n: number) =>
  `select product_id, name, \`required\`, allowed_values from store_product_variables where product_id in (${placeholders(n)})`;
const BUY_RULES = (n: number) =>
  `select product_id, required_product_id, require_linked_account, prevent_downgrade from store_product_rules where product_id in (${placeholders(n)})`;
const BUY_ORDER = `insert into store_orders (account_id, type, status, subtotal, discount, total, earnings, cashback, credit, currency, payment_api, payment_id,
  creation_date)
  values (?, 'credit', 'completed', ?, ?, ?, 0, 0, 0, 'USD', 'credits', null, ?)`;
const BUY_ITEMS = (n: number) =>
  `insert into store_order_items (order_id, product_id, product_name, quantity, unit_price, unit_total, variables) values ` +
  `${Array(n).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')}`;
const BUY_LEDGER =
  `insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at) values (?, ?, ?, 'purchase', ` +
  `'bench', ?, null, ?)`;
const BUY_STOCK = 'update store_products set stock = stock - ? where id = ? and stock >= ?';
const BUY_COMMANDS = (n: number) => `select c.id, c.product_id, c.server_id, c.command, c.run_on, c.require_online, c.per_unit
  from delivery_commands c join delivery_servers s on s.id = c.server_id
  where c.run_on = 'purchase' and s.is_active = 1 and c.product_id in (${placeholders(n)})`;

/**
 * The buy's commands queued for its game servers, as one insert (undefined when its products run
 * none: the store/buy scenario's do not, the rush's launch kits do).
 */
export function queued(commands: Row[], user: Row, orderId: number, at: string): { sql: string; params: unknown[] } | undefined {
  if (commands.length === 0) return undefined;
  return {
    sql:
      'insert into delivery_queue (server_id, user_id, username, order_id, product_id, command, run_on, require_online, status, tries, ' +
      `creation_date, updated_date) values ${commands.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, 'waiting', 0, ?, ?)").join(', ')}`,
    params: commands.flatMap((c) => [
      c.server_id,
      user.id,
      user.username,
      orderId,
      c.product_id,
      String(c.command).replaceAll('{username}', user.username),
      c.run_on,
      c.require_online,
      at,
      at,
    ]),
  };
}

/** The ids of the categories on show: active, and every category above them active too, as the server decides. */
function shownCategories(rows: Row[]): Set<number> {
  const byId = new Map(rows.map((row) => [Number(row.id), row]));
  const shown = new Set<number>();
  for (const row of rows) {
    let at: Row | undefined = row;
    for (let depth = 0; at && Number(at.is_active) === 1 && depth <= rows.length; depth++) {
      if (Number(at.parent_id) === 0) {
        shown.add(Number(row.id));
        break;
      }
      at = byId.get(Number(at.parent_id));
    }
  }
  return shown;
}

/** The products named that are for sale: a product under a hidden category is refused as if inactive. */
export function onShow(products: Row[], categories: Row[]): Row[] {
  const shown = shownCategories(categories);
  const found = products.filter((p) => shown.has(Number(p.category_id)));
  if (found.length < products.length) throw new Refused('product not found');
  return found;
}

function placeholders(n: number): string {
  return Array(n).fill('?').join(', ');
}

/** A product's line as the store prices it: its own price, or the running sale's where that is lower. */
export function pricedLine(p: Row, quantity: number, sales: Sales, at: string) {
  const own = liveDiscount(p, at) ? Number(p.discounted_price) : Number(p.price);
  // A sale never raises a price the product's own discount made lower.
  const sale = sales.length ? bestSale(sales, Number(p.category_id), Number(p.price), at) : undefined;
  const lowered = sale !== undefined && sale.price < own;
  return { id: Number(p.id), categoryId: Number(p.category_id), quantity, own, unit: lowered ? sale.price : own, sale: lowered ? sale.id : undefined };
}

/** The order's lines priced: what the reads found (and the running sales), turned into the rows the writes take. */
function price(body: BuyBody, products: Row[], at: string, sales: Sales) {
  const byId = new Map(products.map((p) => [Number(p.id), p]));
  const lines = body.products.map((line) => {
    const p = byId.get(Number(line.id))!;
    return { p, ...pricedLine(p, line.quantity ?? 1, sales, at), variables: line.variables ?? {} };
  });
  const subtotal = lines.reduce((sum, l) => sum + Number(l.p.price) * l.quantity, 0);
  const priced = lines.reduce((sum, l) => sum + l.unit * l.quantity, 0);
  const items = (orderId: number) => lines.flatMap((l) => [orderId, l.id, l.p.name, l.quantity, Number(l.p.price), l.unit, JSON.stringify(l.variables)]);
  // Stock last and in id order, as the server does: the product rows are the lock every buyer shares.
  const stocked = lines.filter((l) => Number(l.p.stock) !== -1).sort((a, b) => a.id - b.id);
  return { lines, subtotal, priced, total: priced, taken: undefined as Taken | undefined, items, stocked };
}

type Priced = ReturnType<typeof price>;

/** The order with the coupon (its row read with COUPON, its player's with COUPON_PLAYER) taken off. */
function withCoupon(order: Priced, body: BuyBody, user: Row, coupon: Row | undefined, player: Row | undefined, at: string): Priced {
  const amount = couponOff(body.coupon!, coupon, player, order.lines satisfies PricedLine[], order.priced, at);
  return { ...order, total: order.priced - amount, taken: { coupon: coupon!, buyer: String(user.username).toLowerCase(), amount } };
}

function answer(orderId: number, balance: number, order: Priced) {
  return {
    status: true,
    orderID: String(orderId),
    credits: money(balance),
    products: order.lines.map((l) => ({ id: l.id, quantity: l.quantity, variables: Object.entries(l.variables).map(([name, value]) => ({ name, value })) })),
    cashback: '0.00',
    total: money(order.total),
    subtotal: money(order.subtotal),
    discount: money(order.subtotal - order.total),
    data: { orderID: String(orderId), credits: balance / 100 },
  };
}

const BUY_EVENTS = ['store.order.completed', 'credits.changed'];

/** The buy's events that an endpoint subscribes to (`told`), as one insert for its transaction. */
function outbox(told: string[], user: Row, orderId: number, order: Priced, at: string, balance: number) {
  const events: OutboxEvent[] = [
    {
      name: 'store.order.completed',
      payload: {
        orderId,
        userId: Number(user.id),
        username: user.username,
        linkedAccounts: {},
        type: 'credit',
        total: order.total,
        currency: 'USD',
        creationDate: at,
        items: order.lines.map((l) => ({ productId: l.id, productName: l.p.name, quantity: l.quantity, variables: l.variables })),
      },
    },
    { name: 'credits.changed', payload: { userId: Number(user.id), delta: -order.total, balance, reason: 'purchase', orderId } },
  ];
  return BaseDb.outbox(events.filter((e) => told.includes(e.name)));
}

/** The coupon's use and the player's, each a conditional write, and the order's promotion rows. */
function promotionsSqlite(sqlite: NonNullable<BaseDb['sqlite']>, orderId: number, order: Priced, at: string): void {
  const t = order.taken;
  if (t) {
    const step = (s: { sql: string; params: (string | number)[] }) => sqlite.run(s.sql, ...s.params).changes;
    if (step(useCoupon(t)) === 0) throw new Refused(`the coupon ${t.coupon.code} is used up.`, true);
    const first = playerFirst(t);
    if (step(usePlayer(t)) === 0 && step({ ...first, sql: `${first.sql} on conflict (coupon_id, buyer_key) do nothing` }) === 0) {
      throw new Refused(`the coupon ${t.coupon.code} is used up for this player.`, true);
    }
  }
  for (const row of promotionRows(orderId, order.lines, order.priced, t, at)) sqlite.run(row.sql, ...row.params);
}

function buySqlite(db: BaseDb, body: BuyBody, told: string[], sales: Sales) {
  const sqlite = db.sqlite!;
  const ids = body.products.map((p) => Number(p.id));
  return sqlite.tx(() => {
    const at = now();
    const [user] = sqlite.all(BUY_USER, Number(body.userID));
    if (!user) throw new Refused('no such user');
    let order = price(body, onShow(sqlite.all(BUY_PRODUCTS(ids.length), ...ids), sqlite.all(BUY_CATEGORIES)), at, sales);
    sqlite.all(BUY_VARIABLES(ids.length), ...ids);
    sqlite.all(BUY_RULES(ids.length), ...ids);
    if (body.coupon) {
      const [coupon] = sqlite.all(COUPON, body.coupon.trim().toLowerCase());
      const [player] = Number(coupon?.per_player) > 0 ? sqlite.all(COUPON_PLAYER, coupon!.id, String(user.username).toLowerCase()) : [];
      order = withCoupon(order, body, user, coupon, player, at);
    }
    const orderId = sqlite.run(BUY_ORDER, user.id, order.subtotal, order.subtotal - order.total, order.total, at).lastId;
    sqlite.run(BUY_ITEMS(order.lines.length), ...order.items(orderId));
    promotionsSqlite(sqlite, orderId, order, at);
    sqlite.run('insert into credits_wallets (user_id, balance) values (?, 0) on conflict (user_id) do nothing', user.id);
    const [debited] = sqlite.all(
      'update credits_wallets set balance = balance - ? where user_id = ? and balance >= ? returning balance',
      order.total,
      user.id,
      order.total,
    );
    if (!debited) throw new Refused('insufficient balance');
    sqlite.run(BUY_LEDGER, user.id, -order.total, debited.balance, orderId, at);
    for (const l of order.stocked) if (sqlite.run(BUY_STOCK, l.quantity, l.id, l.quantity).changes === 0) throw new Refused('out of stock');
    const queue = queued(sqlite.all(BUY_COMMANDS(ids.length), ...ids), user, orderId, at);
    if (queue) sqlite.run(queue.sql, ...(queue.params as (string | number)[]));
    const events = outbox(told, user, orderId, order, at, Number(debited.balance));
    if (events) sqlite.run(events.sql, ...events.params);
    return answer(orderId, Number(debited.balance), order);
  });
}

type MysqlRun = (sql: string, params: unknown[]) => Promise<{ affectedRows: number; insertId: number }>;

/** As promotionsSqlite: a player's first use is the insert the unique key lets through once. */
async function promotionsMysql(run: MysqlRun, orderId: number, order: Priced, at: string): Promise<void> {
  const t = order.taken;
  if (t) {
    const step = async (s: { sql: string; params: (string | number)[] }) => (await run(s.sql, s.params)).affectedRows;
    if ((await step(useCoupon(t))) === 0) throw new Refused(`the coupon ${t.coupon.code} is used up.`, true);
    if ((await step(usePlayer(t))) === 0) {
      try {
        await step(playerFirst(t));
      } catch (err) {
        if ((err as { code?: string }).code !== 'ER_DUP_ENTRY') throw err;
        throw new Refused(`the coupon ${t.coupon.code} is used up for this player.`, true);
      }
    }
  }
  for (const row of promotionRows(orderId, order.lines, order.priced, t, at)) await run(row.sql, row.params);
}

function buyMysql(db: BaseDb, body: BuyBody, told: string[], sales: Sales) {
  const ids = body.products.map((p) => Number(p.id));
  return db.mysqlTx(async (conn) => {
    const all = async (sql: string, params: unknown[]) => (await conn.execute(sql, params as never[]))[0] as Row[];
    const run: MysqlRun = async (sql, params) => (await conn.execute(sql, params as never[]))[0] as { affectedRows: number; insertId: number };
    const at = now();
    const [user] = await all(BUY_USER, [Number(body.userID)]);
    if (!user) throw new Refused('no such user');
    const [products, categories] = await Promise.all([all(BUY_PRODUCTS(ids.length), ids), all(BUY_CATEGORIES, [])]);
    let order = price(body, onShow(products, categories), at, sales);
    await all(BUY_VARIABLES(ids.length), ids);
    await all(BUY_RULES(ids.length), ids);
    if (body.coupon) {
      const [coupon] = await all(COUPON, [body.coupon.trim().toLowerCase()]);
      const [player] = Number(coupon?.per_player) > 0 ? await all(COUPON_PLAYER, [coupon!.id, String(user.username).toLowerCase()]) : [];
      order = withCoupon(order, body, user, coupon, player, at);
    }
    const orderId = (await run(BUY_ORDER, [user.id, order.subtotal, order.subtotal - order.total, order.total, at])).insertId;
    await run(BUY_ITEMS(order.lines.length), order.items(orderId));
    await promotionsMysql(run, orderId, order, at);
    await run('insert into credits_wallets (user_id, balance) values (?, 0) on duplicate key update balance = balance', [user.id]);
    const debit = await run('update credits_wallets set balance = last_insert_id(balance - ?) where user_id = ? and balance >= ?', [
      order.total,
      user.id,
      order.total,
    ]);
    if (debit.affectedRows === 0) throw new Refused('insufficient balance');
    await run(BUY_LEDGER, [user.id, -order.total, debit.insertId, orderId, at]);
    for (const l of order.stocked) if ((await run(BUY_STOCK, [l.quantity, l.id, l.quantity])).affectedRows === 0) throw new Refused('out of stock');
    const queue = queued(await all(BUY_COMMANDS(ids.length), ids), user, orderId, at);
    if (queue) await run(queue.sql, queue.params);
    const events = outbox(told, user, orderId, order, at, Number(debit.insertId));
    if (events) await run(events.sql, events.params);
    return answer(orderId, Number(debit.insertId), order);
  });
}

export const scenarios: Scenario[] = [
  {
    name: 'store/listing',
    readOnly: true,
    async seed(api) {
      await seedCatalogue(api, 20, 50);
      return [{ method: 'GET', path: '/api/store/listing' }];
    },
    baseline: { method: 'GET', url: '/api/store/listing', handler: listingHandler },
  },
  {
    name: 'store/buy',
    seed: seedBuyers,
    baseline: {
      method: 'POST',
      url: '/api/store/buy',
      async handler(db, request, reply) {
        const body = request.body as BuyBody;
        try {
          const told = await db.subscribed(BUY_EVENTS);
          const sales = await runningSales(db, now());
          const buy = async () => (db.sqlite ? buySqlite(db, body, told, sales) : buyMysql(db, body, told, sales));
          return await (body.coupon ? judging(db, request.ip, Number(body.userID), buy) : buy());
        } catch (err) {
          if (err instanceof Refused) return reply.code(400).send({ status: false, error: 'REFUSED', message: err.message });
          if (err instanceof Limited)
            return reply.code(429).header('retry-after', err.retryAfter).send({ status: false, error: 'RATE_LIMITED', message: err.message });
          throw err;
        }
      },
    },
  },
];
