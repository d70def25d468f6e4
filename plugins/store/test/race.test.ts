import t from 'tap';
import { call, onMysql, type TestLike } from '../../../test/helper.ts';
import type { FastifyInstance } from 'fastify';
import { fields, sql, sum, typed } from '../../../core/sql.ts';
import { StoreOrder, StoreOrderItem, StoreProduct } from '../entities.ts';
import { balanceOf, makeCategory, makeProduct, makeUser, STORE_FEATURES, storeApp } from './fixtures.ts';

const I = StoreOrderItem.c;
/** Units of a product sold, over every order. */
const soldOf = (app: FastifyInstance, product: number) =>
  app.db.query(
    sql`select ${fields({ n: typed<number | string>(sql`coalesce(${sum(I.quantity)}, 0)`) })} from ${StoreOrderItem} where ${I.productId} = ${product}`,
  );

// On SQLite writers queue up anyway; on MariaDB these requests really run side by side on a
// pool of connections, which is what these tests are for.
async function rush(t: TestLike, product: { price: string; stock: number }, buyers: number, cents: number) {
  const app = await storeApp(t, STORE_FEATURES, { database: { poolSize: 12 } });
  const category = await makeCategory(app, { name: 'Drops' });
  const id = await makeProduct(app, { categoryID: category, name: 'Wanted', ...product });
  const ids: number[] = [];
  for (let i = 0; i < buyers; i++) ids.push(await makeUser(app, `buyer${i}`, cents));
  return { app, product: id, buyers: ids };
}

t.test(`buyers racing for the last units sell exactly the stock and never overdraw (${onMysql ? 'MariaDB' : 'SQLite'})`, async (t) => {
  const STOCK = 7;
  const PRICE = 1000;
  const { app, product, buyers } = await rush(t, { price: '10', stock: STOCK }, 24, PRICE);

  // Each buyer can pay for one unit and asks twice at once; a third of them also try for two units.
  const attempts = buyers.flatMap((userID, i) => [
    { userID, products: [product] },
    { userID, products: [product] },
    ...(i % 3 === 0 ? [{ userID, products: [{ id: product, quantity: 2 }] }] : []),
  ]);
  const answers = await Promise.all(attempts.map((body) => call(app, '/api/store/buy', { body, as: 'json' })));

  const outcomes = new Map<string, number>();
  for (const res of answers) {
    const key = res.statusCode === 200 ? '200' : `${res.statusCode} ${res.json().error}`;
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  }
  t.same(
    [...outcomes.keys()].filter((k) => !['200', '400 OUT_OF_STOCK', '400 INSUFFICIENT_BALANCE'].includes(k)),
    [],
    `only 200, OUT_OF_STOCK or INSUFFICIENT_BALANCE: ${JSON.stringify(Object.fromEntries(outcomes))}`,
  );
  t.equal(outcomes.get('200'), STOCK, 'as many purchases as units (none of them could buy two)');

  const [row] = await app.db.query(sql`select ${fields({ stock: StoreProduct.c.stock })} from ${StoreProduct} where ${StoreProduct.c.id} = ${product}`);
  t.equal(Number(row!.stock), 0, 'the stock is sold out, not below');
  const [sold] = await soldOf(app, product);
  t.equal(Number(sold!.n), STOCK, 'exactly the stock was sold');

  const balances = await Promise.all(buyers.map((id) => balanceOf(app, id)));
  t.ok(
    balances.every((b) => b === 0 || b === PRICE),
    `every balance is what was paid for: ${balances.join(' ')}`,
  );
  t.equal(balances.filter((b) => b === 0).length, STOCK, 'the ones who paid are the ones who got a unit');
  const orders = await app.db.query(sql`select ${fields({ account_id: StoreOrder.c.accountId })} from ${StoreOrder}`);
  t.same(
    orders.map((o) => Number(o.account_id)).sort((a, b) => a - b),
    buyers.filter((_, i) => balances[i] === 0).sort((a, b) => a - b),
    'one order per paying buyer',
  );
});

// An admin's edit reads the product, then writes it: the write must carry only what the edit
// changes, or it puts back the stock it read over the buys that committed in between.
t.test(`admins editing a product while it sells leave its stock at start minus sold (${onMysql ? 'MariaDB' : 'SQLite'})`, async (t) => {
  const STOCK = 1000;
  const BUYERS = 10;
  const BUYS_EACH = 20;
  const { app, product, buyers } = await rush(t, { price: '1', stock: STOCK }, BUYERS, 100 * BUYS_EACH);

  const buys = buyers.map(async (userID) => {
    const codes: number[] = [];
    for (let i = 0; i < BUYS_EACH; i++) codes.push((await call(app, '/api/store/buy', { body: { userID, products: [product] }, as: 'json' })).statusCode);
    return codes;
  });
  const edits = [1, 2, 3].map(async (admin) => {
    const codes: number[] = [];
    for (let i = 0; i < 40; i++) {
      const body = { name: `Wanted ${admin}.${i}` };
      codes.push((await call(app, `/api/admin/store/products/${product}`, { method: 'PATCH', body, as: 'json' })).statusCode);
    }
    return codes;
  });
  const [bought, edited] = await Promise.all([Promise.all(buys), Promise.all(edits)]);
  t.same([...new Set(edited.flat())], [200], 'every edit answered 200');
  t.same([...new Set(bought.flat())], [200], 'every buy answered 200');

  const [sold] = await soldOf(app, product);
  t.equal(Number(sold!.n), BUYERS * BUYS_EACH, 'every buy sold one unit');
  const after = (await call(app, `/api/store/products/${product}`)).json();
  t.equal(Number(after.stock), STOCK - Number(sold!.n), 'stock = start - sold');
});

t.test(`admins setting different purchase rules of a product at once both keep theirs (${onMysql ? 'MariaDB' : 'SQLite'})`, async (t) => {
  const app = await storeApp(t, STORE_FEATURES, { database: { poolSize: 12 } });
  const category = await makeCategory(app, { name: 'Ranks' });
  const products: number[] = [];
  for (let i = 0; i < 10; i++) products.push(await makeProduct(app, { categoryID: category, name: `Rank ${i}`, price: '1' }));
  const patch = (id: number, body: Record<string, unknown>) => call(app, `/api/admin/store/products/${id}/rules`, { method: 'PATCH', body, as: 'json' });
  const answers = await Promise.all(products.flatMap((id) => [patch(id, { requireLinkedAccount: true }), patch(id, { preventDowngrade: true })]));
  t.same([...new Set(answers.map((res) => res.statusCode))], [200], 'every change answered 200');
  for (const id of products) {
    t.same(
      (await call(app, `/api/admin/store/products/${id}/rules`)).json(),
      { requiredProductID: '0', requireLinkedAccount: true, preventDowngrade: true },
      `product ${id} has both rules`,
    );
  }
});
