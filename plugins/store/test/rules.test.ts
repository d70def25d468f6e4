import t from 'tap';
import { expectErrors } from '../../../test/fixtures.ts';
import { call } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { makeCategory, makeProduct, makeRole, makeUser, snapshot, storeApp } from './fixtures.ts';

t.test('purchase rules: required product, linked chat account, no downgrade; 400 naming the product, nothing changed', async (t) => {
  const app = await storeApp(t);
  const users = app.services.get(usersRef);
  const ranks = await makeCategory(app, { name: 'Ranks' });
  const vip = await makeRole(app, 'VIP');
  const mvp = await makeRole(app, 'MVP');
  await call(app, `/api/admin/roles/${mvp}`, { method: 'PATCH', body: { priority: 10 }, as: 'json' });
  await call(app, `/api/admin/roles/${vip}`, { method: 'PATCH', body: { priority: 5 }, as: 'json' });
  const vipRank = await makeProduct(app, { categoryID: ranks, name: 'VIP rank', price: '1', giveRoleID: vip, duration: 30 });
  const mvpRank = await makeProduct(app, { categoryID: ranks, name: 'MVP rank', price: '1', giveRoleID: mvp, duration: 30 });
  const starter = await makeProduct(app, { categoryID: ranks, name: 'Starter kit', price: '1' });
  const pro = await makeProduct(app, { categoryID: ranks, name: 'Pro kit', price: '1' });

  let res = await call(app, `/api/admin/store/products/${pro}/rules`);
  t.same(res.json(), { requiredProductID: '0', requireLinkedAccount: false, preventDowngrade: false }, 'none by default');
  res = await call(app, `/api/admin/store/products/${pro}/rules`, {
    method: 'PATCH',
    body: { requiredProductID: String(starter), requireLinkedAccount: '1' },
    as: 'urlencoded',
  });
  t.same(res.json(), { requiredProductID: String(starter), requireLinkedAccount: true, preventDowngrade: false });
  res = await call(app, `/api/admin/store/products/${vipRank}/rules`, { method: 'PATCH', body: { preventDowngrade: true }, as: 'json' });
  t.same(res.json(), { requiredProductID: '0', requireLinkedAccount: false, preventDowngrade: true });
  t.same((await call(app, `/api/admin/store/products/${vipRank}/rules`)).json(), res.json(), 'stored');

  await expectErrors(t, app, [
    {
      url: `/api/admin/store/products/${pro}/rules`,
      method: 'PATCH',
      body: { requiredProductID: String(pro) },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /itself/,
    },
    { url: `/api/admin/store/products/${pro}/rules`, method: 'PATCH', body: { requiredProductID: '999' }, status: 404, error: 'PRODUCT_NOT_FOUND' },
    {
      url: `/api/admin/store/products/${pro}/rules`,
      method: 'PATCH',
      body: { requiredProductID: 'x' },
      status: 400,
      error: 'VALIDATION_ERROR',
      message: /requiredProductID/,
    },
    { url: '/api/admin/store/products/999/rules', status: 404, error: 'PRODUCT_NOT_FOUND' },
  ]);
  t.same((await call(app, `/api/admin/store/products/${pro}/rules`)).json().requiredProductID, String(starter), 'refused changes left it');

  const steve = await makeUser(app, 'steve', 10_000);
  const before = await snapshot(app, steve);
  await users.grantRole(steve, mvp);
  const held = await snapshot(app, steve);
  await expectErrors(t, app, [
    { url: '/api/store/buy', body: { userID: steve, products: [pro] }, status: 400, error: 'REQUIRED_PRODUCT', message: /Pro kit.*Starter kit/ },
    { url: '/api/store/buy', body: { userID: steve, products: [vipRank] }, status: 400, error: 'DOWNGRADE_NOT_ALLOWED', message: /VIP rank.*MVP/ },
  ]);
  t.same(await snapshot(app, steve), held, 'refused buys changed nothing');
  t.not(before.roles.length, held.roles.length);

  t.ok([200, 201].includes((await call(app, '/api/store/buy', { body: { userID: steve, products: [starter] } })).statusCode));
  await expectErrors(t, app, [
    { url: '/api/store/buy', body: { userID: steve, products: [pro] }, status: 400, error: 'REQUIRED_LINKED_ACCOUNT', message: /Pro kit/ },
  ]);
  await users.linkAccount(steve, 'chat', '77');
  t.ok([200, 201].includes((await call(app, '/api/store/buy', { body: { userID: steve, products: [pro] } })).statusCode), 'all rules met');
  await users.revokeRole(steve, mvp);
  t.ok([200, 201].includes((await call(app, '/api/store/buy', { body: { userID: steve, products: [vipRank] } })).statusCode), 'no higher rank held');
  t.ok([200, 201].includes((await call(app, '/api/store/buy', { body: { userID: steve, products: [mvpRank] } })).statusCode), 'an upgrade is fine');
});
