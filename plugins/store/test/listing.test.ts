import t from 'tap';
import { sql } from '../../../core/sql.ts';
import { call } from '../../../test/helper.ts';
import { StoreCategory, StoreProduct, StoreProductVariable } from '../entities.ts';
import { makeCategory, makeProduct, storeApp } from './fixtures.ts';

type Shown = Record<string, unknown> & { id: string };

t.test(
  "each listing answers its products as they are now: a product's JSON is kept only while its row, variables, price and the site's settings are unchanged",
  async (t) => {
    const app = await storeApp(t);
    const category = await makeCategory(app, { name: 'Ranks' });
    const variables = [{ name: 'server', required: '1', values: ['eu', 'na'] }];
    const [a, b, c] = [
      await makeProduct(app, { categoryID: category, name: 'A', price: '5', variables }),
      await makeProduct(app, { categoryID: category, name: 'B', price: '6', discountedPrice: '4', discountExpiryDate: '2031-06-01 12:00:00' }),
      await makeProduct(app, { categoryID: category, name: 'C', price: '7' }),
    ];
    // The catalogue's own list is made afresh on every read: each listed product must show the same row.
    const listed = async (why: string) => {
      const res = await call(app, '/api/store/listing');
      t.equal(res.statusCode, 200, res.body);
      const shown = (res.json().categories as { products: Shown[] }[]).flatMap((n) => n.products);
      const rows = new Map(((await call(app, '/api/store/products')).json() as Shown[]).map((p) => [p.id, p]));
      for (const p of shown)
        t.same(Object.fromEntries(Object.keys(rows.get(p.id)!).map((k) => [k, p[k]])), rows.get(p.id), `${why}: product ${p.id} as stored`);
      return new Map(shown.map((p) => [Number(p.id), p]));
    };
    const first = await listed('three products');
    t.same([...first.keys()], [a, b, c]);

    await StoreProduct.update(app.db, a, { stock: 3 });
    t.equal((await listed('a stock changed by another instance')).get(a)!.stock, '3');
    await app.db.run(sql`update ${StoreProductVariable} set ${StoreProductVariable.c.allowedValues} = ${'["eu","na","asia"]'}`);
    t.same((await listed('a variable given a value')).get(a)!.variables, [{ name: 'server', required: '1', values: ['eu', 'na', 'asia'] }]);
    await StoreProduct.update(app.db, b, { discountedPrice: 0 });
    t.match((await listed('a discount ended')).get(b), { total: 6, discount: 0, discountPercent: 0, totalFormatted: '6.00 USD', discountedPrice: '0.00' });
    await StoreProduct.update(app.db, b, { discountedPrice: 400 });
    t.equal((await listed('a discount again')).get(b)!.total, 4);
    t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { timezone: 'Europe/Berlin' }, as: 'json' })).statusCode, 200);
    t.equal((await listed('the site in another time zone')).get(b)!.discountExpiryDate, '2031-06-01 14:00:00');
    t.equal((await call(app, '/api/admin/settings', { method: 'PATCH', body: { currency: 'EUR' }, as: 'json' })).statusCode, 200);
    t.equal((await listed('another currency')).get(c)!.totalFormatted, '7.00 EUR');
    // A product gone, another come: the rest keep their place.
    await StoreProduct.update(app.db, b, { isActive: false });
    const d = await makeProduct(app, { categoryID: category, name: 'D', price: '8' });
    t.same([...(await listed('one product off sale, one new')).keys()], [a, c, d]);
    // The same products in another order, then a category renamed: each a new answer.
    await StoreProduct.update(app.db, d, { priority: -1 });
    t.same([...(await listed('a product moved first')).keys()], [d, a, c]);
    await StoreCategory.update(app.db, category, { name: 'Ranks and kits' });
    t.equal((await call(app, '/api/store/listing')).json().categories[0].name, 'Ranks and kits');
  },
);
