/** What the fuzz suite found on MariaDB after the audit log took every admin change (issues 48, 49). */
import t from 'tap';
import { CoreAuditLog } from '../core/audit.ts';
import { call, build } from './helper.ts';
import { subscriptionsApp } from '../plugins/subscriptions/test/fixtures.ts';
import { makeCategory, makeProduct } from './fixtures.ts';

t.test("an admin change with a value past the audit column's size is stored, its audit entry clipped", async (t) => {
  const app = await build(t, { features: ['users', 'support'] });
  const content = `${'y'.repeat(65_000)}\u0001`;
  const res = await call(app, '/api/admin/support/answers', { body: { title: 'Long', content }, as: 'json' });
  t.equal(res.statusCode, 201, res.body.slice(0, 200));
  const [entry] = await CoreAuditLog.select(app.db);
  t.ok(entry && entry.after !== null && entry.after.length < 25_000, 'the entry is written, its after clipped');
  t.ok(JSON.parse(entry!.after!).clipped.startsWith('{'), 'and it says so');
});

t.test("a subscription plan's price past the price column is refused, not a 500", async (t) => {
  const app = await subscriptionsApp(t);
  const category = await makeCategory(app, { name: 'Ranks' });
  const productID = await makeProduct(app, { categoryID: category, name: 'VIP', price: '9' });
  const res = await call(app, '/api/admin/subscription-plans', { body: { productID, intervalUnit: 'days', price: '987654321' }, as: 'json' });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'VALIDATION_ERROR');
  t.match(res.json().message, /price/);
});
