/**
 * The store's hot paths: the listing the game plugin renders its shop from (at three catalogue
 * sizes, to show its cost and that it does not grow in queries), and the buy. Each runs beside a
 * bare Fastify + mysql2 route doing the same statements. `listingQueryCount` gives the number of
 * SQL statements one listing runs, for the report's query-count row.
 */
import type { FastifyInstance } from 'fastify';
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { now } from '../core/format.ts';
import { inTransaction, seedPost, userWithCredits, type BenchNote, type BenchRequest, type Scenario } from './scenario.ts';

const FEATURES = ['users', 'credits', 'store'];
const BUYERS = 50;

/**
 * A catalogue as a real shop has it: top-level categories each with a subcategory, products with
 * descriptions, some discounted, some with limited stock, some with variables, and a few inactive.
 */
async function seedCatalogue(app: FastifyInstance, key: string, categories: number, perCategory: number): Promise<void> {
  for (let c = 0; c < categories; c++) {
    // Every other category sits under the one before, so the tree is nested, not flat.
    const parentID = c % 2 ? await seedPost(app, key, '/api/admin/store/categories', { name: `Group ${c}`, priority: c }) : '0';
    const categoryID = await seedPost(app, key, '/api/admin/store/categories', { name: `Category ${c}`, parentID, priority: c, gameItem: 'CHEST' });
    // In parallel batches: one product per transaction, one at a time, would take minutes at 1,000.
    for (let start = 0; start < perCategory; start += 25) {
      await Promise.all(Array.from({ length: Math.min(25, perCategory - start) }, (_, k) => {
        const p = start + k;
        return seedPost(app, key, '/api/admin/store/products', {
          categoryID, name: `Product ${c}-${p}`, price: `${1 + (p % 40)}.99`, priority: p,
          details: `<p>Product ${p} of category ${c}: a <b>fine</b> item for your adventures.</p>`,
          gameTitle: `&6Product ${p}`, gameDescription: 'Line one\nLine two', gameItem: 'DIAMOND',
          ...(p % 3 === 0 ? { discountedPrice: '0.99' } : {}),
          ...(p % 4 === 0 ? { stock: 1000 } : {}),
          ...(p % 5 === 0 ? { variables: [{ name: 'server', required: true, values: ['eu', 'na'] }] } : {}),
          ...(p % 10 === 9 ? { isActive: false } : {}),
        });
      }));
    }
  }
}

/** Runs `fn` and returns how many SQL statements the database ran meanwhile (nothing else may run). */
export async function countQueries(app: FastifyInstance, fn: () => Promise<unknown>): Promise<number> {
  const before = app.db.statements;
  await fn();
  return app.db.statements - before;
}

/** SQL statements of one `GET /api/store/listing` over a catalogue of `products` products (seeded into `app`, which runs the store). */
export async function listingQueryCount(app: FastifyInstance, products: number): Promise<number> {
  const key = await app.apiKeys.create(`count-${products}`, ['api', 'admin']);
  const categories = Math.max(1, Math.min(20, Math.floor(products / 10)));
  await seedCatalogue(app, key, categories, Math.ceil(products / categories));
  return countQueries(app, async () => {
    const res = await app.inject({ method: 'GET', url: '/api/store/listing', headers: { 'x-api-key': key } });
    if (res.statusCode !== 200) throw new Error(`listing: ${res.statusCode} ${res.body}`);
  });
}

// ---- baseline: the listing's three statements, nested and shaped by hand

const money = (cents: number) => (cents / 100).toFixed(2);

function listingBaseline(pool: Pool) {
  return {
    method: 'GET' as const,
    url: '/api/store/listing',
    async handler() {
      const [categories] = await pool.query<RowDataPacket[]>(
        'select id, parent_id, name, slug, image_id, image_type, priority, game_status, game_title, game_description, game_item, is_active from store_categories where is_active = 1 order by priority, id');
      const [products] = await pool.query<RowDataPacket[]>(
        'select id, category_id, give_role_id, name, image_id, image_type, details, price, discounted_price, discount_expiry_date, duration, stock, priority, is_featured, game_status, game_title, game_description, game_item, is_active, creation_date from store_products where is_active = 1 order by priority, id');
      const [variables] = await pool.query<RowDataPacket[]>(
        'select product_id, name, `required`, allowed_values from store_product_variables where product_id in (select id from store_products where is_active = 1) order by product_id, `position`');
      const at = now();
      const varsOf = new Map<number, object[]>();
      for (const v of variables) {
        const list = varsOf.get(v.product_id) ?? [];
        list.push({ name: v.name, required: String(v.required), values: JSON.parse(v.allowed_values) });
        varsOf.set(v.product_id, list);
      }
      const nodes = new Map<number, { subcategories: object[]; products: object[] } & Record<string, unknown>>();
      for (const c of categories) {
        nodes.set(c.id, {
          id: String(c.id), parentID: String(c.parent_id), name: c.name, slug: c.slug, imageID: c.image_id, imageType: c.image_type,
          priority: String(c.priority), gameStatus: String(c.game_status), gameTitle: c.game_title, gameDescription: c.game_description,
          gameItem: c.game_item, isActive: String(c.is_active), subcategories: [], products: [],
        });
      }
      const roots: object[] = [];
      for (const c of categories) (c.parent_id === 0 ? roots : nodes.get(c.parent_id)?.subcategories)?.push(nodes.get(c.id)!);
      for (const p of products) {
        const discounted = p.discounted_price > 0 && (p.discount_expiry_date === '1000-01-01 00:00:00' || p.discount_expiry_date > at);
        const total = discounted ? p.discounted_price : p.price;
        nodes.get(p.category_id)?.products.push({
          id: String(p.id), categoryID: String(p.category_id), giveRoleID: String(p.give_role_id), name: p.name, imageID: p.image_id,
          imageType: p.image_type, details: p.details, price: money(p.price), discountedPrice: money(p.discounted_price),
          discountExpiryDate: p.discount_expiry_date, duration: String(p.duration), priority: String(p.priority),
          isFeaturedProduct: String(p.is_featured), gameStatus: String(p.game_status), gameTitle: p.game_title,
          gameDescription: p.game_description, gameItem: p.game_item, isActive: String(p.is_active), creationDate: p.creation_date,
          variables: varsOf.get(p.id) ?? [], stock: p.stock, total: total / 100, originalPrice: p.price / 100,
          discount: (p.price - total) / 100, discountPercent: Math.round(((p.price - total) * 100) / p.price), restricted: false,
          totalFormatted: `${money(total)} USD`, originalPriceFormatted: `${money(p.price)} USD`,
        });
      }
      return { categories: roots };
    },
  };
}

function listing(name: string, categories: number, perCategory: number): Scenario {
  return {
    name,
    features: FEATURES,
    async prepare(app, key) {
      await seedCatalogue(app, key, categories, perCategory);
      return [{ method: 'GET', path: '/api/store/listing' }];
    },
    baseline: listingBaseline,
  };
}

// ---- buy: many buyers, each buying a stock-limited product and an unlimited one in one order

async function seedBuyers(app: FastifyInstance, key: string): Promise<BenchRequest[]> {
  const categoryID = await seedPost(app, key, '/api/admin/store/categories', { name: 'Shop' });
  const limited = await seedPost(app, key, '/api/admin/store/products', { categoryID, name: 'Limited', price: '2.50', stock: 100_000_000 });
  const unlimited = await seedPost(app, key, '/api/admin/store/products', {
    categoryID, name: 'Kit', price: '1.00', discountedPrice: '0.75', variables: [{ name: 'server', required: true, values: ['eu', 'na'] }],
  });
  const requests: BenchRequest[] = [];
  for (let i = 0; i < BUYERS; i++) {
    const userID = await userWithCredits(app, `buyer${i}`, 100_000_000_00);
    requests.push({
      method: 'POST', path: '/api/store/buy', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userID, products: [{ id: limited, quantity: 2 }, { id: unlimited, variables: { server: 'eu' } }] }),
    });
  }
  return requests;
}

interface BuyBody { userID: number; products: { id: string; quantity?: number; variables?: Record<string, string> }[] }

/** The buy's statements in one transaction: user, products and variables, order and items, wallet and ledger, stock. */
async function buyOnce(conn: PoolConnection, body: BuyBody) {
  const at = now();
  const [[user]] = await conn.query<RowDataPacket[]>('select id, username from users_accounts where id = ?', [body.userID]);
  if (!user) throw new Error('no such user');
  const ids = body.products.map((p) => Number(p.id));
  const [products] = await conn.query<RowDataPacket[]>(`select id, name, price, discounted_price, discount_expiry_date, stock from store_products where id in (?) and is_active = 1`, [ids]);
  await conn.query('select product_id, name, `required`, allowed_values from store_product_variables where product_id in (?)', [ids]);
  const byId = new Map(products.map((p) => [p.id as number, p]));
  const lines = body.products.map((line) => {
    const p = byId.get(Number(line.id))!;
    const live = p.discounted_price > 0 && (p.discount_expiry_date === '1000-01-01 00:00:00' || p.discount_expiry_date > at);
    return { p, quantity: line.quantity ?? 1, unit: live ? p.discounted_price as number : p.price as number, variables: line.variables ?? {} };
  });
  const subtotal = lines.reduce((sum, l) => sum + l.p.price * l.quantity, 0);
  const total = lines.reduce((sum, l) => sum + l.unit * l.quantity, 0);
  const [order] = await conn.query<ResultSetHeader>(
    `insert into store_orders (account_id, type, status, subtotal, discount, total, earnings, cashback, credit, currency, payment_api, payment_id, creation_date)
     values (?, 'credit', 'completed', ?, ?, ?, 0, 0, 0, 'USD', 'credits', null, ?)`, [user.id, subtotal, subtotal - total, total, at]);
  await conn.query('insert into store_order_items (order_id, product_id, product_name, quantity, unit_price, unit_total, variables) values ?',
    [lines.map((l) => [order.insertId, l.p.id, l.p.name, l.quantity, l.p.price, l.unit, JSON.stringify(l.variables)])]);
  await conn.query('insert into credits_wallets (user_id, balance) values (?, 0) on duplicate key update balance = balance', [user.id]);
  const [debit] = await conn.query<ResultSetHeader>('update credits_wallets set balance = last_insert_id(balance - ?) where user_id = ? and balance >= ?', [total, user.id, total]);
  if (debit.affectedRows === 0) throw new Error('insufficient balance');
  const balance = debit.insertId;
  await conn.query(`insert into credits_ledger (user_id, delta, balance, reason, key_name, order_id, transfer_id, created_at) values (?, ?, ?, 'purchase', 'bench', ?, null, ?)`,
    [user.id, -total, balance, order.insertId, at]);
  // Last, as the server does: the product rows are the lock every buyer shares.
  for (const { p, quantity } of [...lines].sort((a, b) => a.p.id - b.p.id)) {
    if (p.stock === -1) continue;
    const [res] = await conn.query<ResultSetHeader>('update store_products set stock = stock - ? where id = ? and stock >= ?', [quantity, p.id, quantity]);
    if (res.affectedRows === 0) throw new Error('out of stock');
  }
  return { status: true, orderID: String(order.insertId), credits: money(balance), total: money(total), subtotal: money(subtotal) };
}

function buyBaseline(pool: Pool) {
  return {
    method: 'POST' as const,
    url: '/api/store/buy',
    async handler(request: { body: unknown }, reply: { code(n: number): unknown }) {
      const result = await inTransaction(pool, (conn) => buyOnce(conn, request.body as BuyBody));
      return result;
    },
  };
}

export const scenarios: Scenario[] = [
  listing('store/listing', 20, 50),
  listing('store/listing-10', 2, 5),
  listing('store/listing-1000', 10, 100),
  { name: 'store/buy', features: FEATURES, prepare: seedBuyers, baseline: buyBaseline },
];

/** The listing's statement count must not grow with the catalogue: measured at 10 and 1,000 products. */
export const notes: BenchNote[] = [10, 1000].map((products) => ({
  features: FEATURES,
  measure: async (app: FastifyInstance) => `store/listing runs ${await listingQueryCount(app, products)} SQL statements per request at ${products} products.`,
}));
