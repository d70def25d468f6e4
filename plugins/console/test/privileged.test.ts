/**
 * Roles that open the console (and roles another feature marks privileged) are granted only by an
 * admin: the admin scope or an admin in the console; never sold, never with a narrower key.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { balanceOf, makeCategory, makeProduct, makeUser } from '../../../test/fixtures.ts';
import { apiKey, build, call } from '../../../test/helper.ts';
import { usersRef } from '../../users/contract.ts';
import { grant, register, role, signInByForm } from './browser.ts';
import { fields, sql } from '../../../core/sql.ts';
import { StoreOrder, StoreProduct } from '../../store/entities.ts';

/** What a refused change must leave as it was. */
const P = StoreProduct.c;

async function state(app: FastifyInstance, userId: number) {
  return {
    roles: (await call(app, `/api/users/${userId}/roles`)).json(),
    balance: await balanceOf(app, userId),
    products: await app.db.query(sql`select ${fields({ id: P.id, give_role_id: P.giveRoleId, stock: P.stock })} from ${StoreProduct} order by ${P.id}`),
    orders: await app.db.query(sql`select ${fields({ id: StoreOrder.c.id })} from ${StoreOrder}`),
  };
}

/** A console session of a signed-in staff member: its cookie and CSRF token, for posting forms as a browser would. */
async function consoleSession(app: FastifyInstance, username: string): Promise<{ cookie: string; csrf: string }> {
  const signed = await signInByForm(app, username);
  const cookie = String(signed.headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const page = await app.inject({ url: '/console', headers: { cookie } });
  return { cookie, csrf: /name="_csrf" value="([0-9a-f]+)"/.exec(page.body)![1]! };
}

function postForm(app: FastifyInstance, url: string, session: { cookie: string; csrf: string }, form: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url,
    headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: session.csrf, ...form }).toString(),
  });
}

t.test('privileged roles: granted only by an admin, never sold', async (t) => {
  const app = await build(t);
  const admin = await role(app, 'Admin');
  const support = await role(app, 'Support');
  const vip = await role(app, 'VIP');
  const aliceId = await register(app, 'Alice');
  await grant(app, aliceId, admin);
  const steve = await makeUser(app, 'Steve', 10_000);
  const game = await apiKey(app, 'game-server');
  const bot = await app.apiKeys.create('chat-bot', ['users', 'chat-integration']);

  await t.test('a key without the admin scope cannot grant or move to a console role', async (t) => {
    t.equal((await call(app, `/api/users/${steve}/roles`, { key: game, body: { roleID: String(vip) } })).statusCode, 200, 'an ordinary role: granted');
    const before = await state(app, steve);
    for (const [name, key] of [
      ['game server', game],
      ['chat bot', bot],
    ] as const) {
      for (const roleId of [admin, support]) {
        let res = await call(app, `/api/users/${steve}/roles`, { key, body: { roleID: String(roleId) } });
        t.equal(res.statusCode, 403, `${name}: POST role ${roleId}`);
        t.match(res.json(), { status: false, error: 'FORBIDDEN', message: /opens the staff console.*admin scope/ });
        res = await call(app, `/api/users/${steve}/roles/${vip}`, { key, method: 'PATCH', body: { roleID: String(roleId) } });
        t.equal(res.statusCode, 403, `${name}: PATCH VIP to role ${roleId}`);
        t.match(res.json(), { error: 'FORBIDDEN', message: /opens the staff console/ });
      }
      const res = await call(app, `/api/users/${aliceId}/roles/${admin}`, {
        key,
        method: 'PATCH',
        body: { roleID: String(admin), expiryDate: '2099-01-01 00:00:00' },
      });
      t.equal(res.statusCode, 403, `${name}: nor change the expiry of a console role held`);
    }
    t.same(await state(app, steve), before, 'nothing changed');
    t.same(
      (await call(app, `/api/users/${aliceId}/roles`)).json().map((r: { expiryDate: string }) => r.expiryDate),
      ['1000-01-01 00:00:00'],
      "Alice's role as it was",
    );
  });

  await t.test('nor take a console role away, or move it to another', async (t) => {
    const before = (await call(app, `/api/users/${aliceId}/roles`)).json();
    for (const [name, key] of [
      ['game server', game],
      ['chat bot', bot],
    ] as const) {
      let res = await call(app, `/api/users/${aliceId}/roles/${admin}`, { key, method: 'DELETE' });
      t.equal(res.statusCode, 403, `${name}: DELETE the admin role`);
      t.match(res.json(), { error: 'FORBIDDEN', message: /opens the staff console.*admin scope/ });
      res = await call(app, `/api/users/${aliceId}/roles/${admin}`, { key, method: 'PATCH', body: { roleID: String(vip) } });
      t.equal(res.statusCode, 403, `${name}: PATCH the admin role to VIP`);
    }
    t.same((await call(app, `/api/users/${aliceId}/roles`)).json(), before, 'Alice still holds what she held');
    const res = await call(app, `/api/users/${steve}/roles/${vip}`, { key: game, method: 'DELETE' });
    t.equal(res.statusCode, 200, 'an ordinary role: taken away');
    t.equal((await call(app, `/api/users/${steve}/roles`, { key: game, body: { roleID: String(vip) } })).statusCode, 200, 'and given back');
  });

  await t.test('the admin scope still grants and moves them', async (t) => {
    let res = await call(app, `/api/users/${steve}/roles`, { body: { roleID: String(support) } });
    t.equal(res.statusCode, 200);
    res = await call(app, `/api/users/${steve}/roles/${support}`, { method: 'PATCH', body: { roleID: String(admin) } });
    t.equal(res.statusCode, 200);
    t.same(
      res
        .json()
        .map((r: { name: string }) => r.name)
        .sort(),
      ['Admin', 'VIP'],
    );
    res = await call(app, `/api/users/${steve}/roles/${admin}`, { method: 'DELETE' });
    t.same(
      res.json().map((r: { name: string }) => r.name),
      ['VIP'],
    );
  });

  const ranks = await makeCategory(app, { name: 'Ranks' });
  const vipRank = await makeProduct(app, { categoryID: ranks, name: 'VIP rank', price: '1.00', giveRoleID: vip, duration: 30, stock: 5 });

  await t.test('a product cannot grant a console role: refused at create and update', async (t) => {
    const before = await state(app, steve);
    let res = await call(app, '/api/admin/store/products', { body: { categoryID: ranks, name: 'Staff', price: '1.00', giveRoleID: admin }, as: 'json' });
    t.equal(res.statusCode, 400);
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^giveRoleID: .*Admin.*opens the staff console.*never sold/ });
    res = await call(app, `/api/admin/store/products/${vipRank}`, { method: 'PATCH', body: { giveRoleID: support }, as: 'json' });
    t.equal(res.statusCode, 400);
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^giveRoleID: .*Support/ });
    t.same(await state(app, steve), before, 'no product made or changed');

    const session = await consoleSession(app, 'Alice');
    const page = await app.inject({ url: '/console/catalogue', headers: { cookie: session.cookie } });
    const choices = /<select id="new-product-giveRoleID"[^>]*>([\s\S]*?)<\/select>/.exec(page.body)![1]!;
    t.match(choices, />VIP</, 'the console offers ordinary roles');
    t.notMatch(choices, />Admin<|>Support</, 'but not console roles');
    const posted = await postForm(app, '/console/catalogue/products', session, {
      name: 'Staff',
      categoryID: String(ranks),
      price: '1.00',
      giveRoleID: String(admin),
      duration: '0',
    });
    t.equal(posted.statusCode, 422, 'a forged console form is refused');
    t.match(posted.body, /id="new-product-giveRoleID-error">giveRoleID: [^<]*opens the staff console/, 'the error beside the role');
    t.same(await state(app, steve), before, 'nothing made');
  });

  await t.test('a product already granting one (older data, or the role became privileged) cannot be bought', async (t) => {
    await StoreProduct.update(app.db, vipRank, { giveRoleId: admin });
    const before = await state(app, steve);
    const res = await call(app, '/api/store/buy', { key: game, body: { userID: String(steve), products: [String(vipRank)] } });
    t.equal(res.statusCode, 403);
    // On the buy, `error` may carry the game plugin's nearest code and `code` ours (docs/clients.md).
    t.equal(res.json().code ?? res.json().error, 'FORBIDDEN');
    t.match(res.json().message, /^VIP rank \(product \d+\) is not for sale: Role \d+ \(Admin\) opens the staff console: it is never sold\.$/);
    t.same(await state(app, steve), before, 'nothing charged, granted, taken from stock or ordered');
  });

  await t.test('a role another feature marks privileged: the same rules', async (t) => {
    const mod = await role(app, 'Moderator');
    const modRank = await makeProduct(app, { categoryID: ranks, name: 'Moderator rank', price: '1.00', giveRoleID: mod, duration: 0 });
    app.services.get(usersRef).markPrivileged('moderator', 'lets its holders moderate the forum');
    const before = await state(app, steve);
    let res = await call(app, `/api/users/${steve}/roles`, { key: game, body: { roleID: String(mod) } });
    t.equal(res.statusCode, 403);
    t.match(res.json(), { error: 'FORBIDDEN', message: /Moderator.*lets its holders moderate the forum/ });
    res = await call(app, '/api/store/buy', { key: game, body: { userID: String(steve), products: [String(modRank)] } });
    t.equal(res.statusCode, 403);
    res = await call(app, `/api/admin/store/products/${modRank}`, { method: 'PATCH', body: { price: '2.00' }, as: 'json' });
    t.match(res.json(), { error: 'VALIDATION_ERROR', message: /^giveRoleID: .*Moderator/ }, 'its product cannot be saved until its role goes');
    t.same(await state(app, steve), before, 'nothing changed');
    t.equal((await call(app, `/api/users/${steve}/roles`, { body: { roleID: String(mod) } })).statusCode, 200, 'the admin scope grants it');
  });

  await t.test("the console's grant form selects no role by default; an admin grants a console role there", async (t) => {
    const session = await consoleSession(app, 'Alice');
    const bob = await register(app, 'Bob');
    const page = await app.inject({ url: `/console/players/${bob}`, headers: { cookie: session.cookie } });
    const select = /<select id="grant-role-roleID"[^>]*>([\s\S]*?)<\/select>/.exec(page.body);
    t.ok(select, 'the grant form is there');
    t.match(select![0], /^<select[^>]* required/, 'a required choice');
    t.match(select![1], /^\s*<option value="">[^<]+<\/option>/, 'first an empty choice');
    t.notMatch(select![1], /selected/, 'none selected');

    let res = await postForm(app, `/console/players/${bob}/roles`, session, { roleID: '' });
    t.equal(res.statusCode, 422, 'sent as is, the form grants nothing');
    t.match(res.body, /id="grant-role-roleID-error">roleID is required/);
    t.same((await call(app, `/api/users/${bob}/roles`)).json(), []);
    res = await postForm(app, `/console/players/${bob}/roles`, session, { roleID: String(support) });
    t.equal(res.statusCode, 303, 'an admin in the console grants a console role');
    t.same(
      (await call(app, `/api/users/${bob}/roles`)).json().map((r: { name: string }) => r.name),
      ['Support'],
    );

    const helper = await consoleSession(app, 'Bob');
    res = await postForm(app, `/console/players/${bob}/roles`, helper, { roleID: String(admin) });
    t.equal(res.statusCode, 403, 'support staff cannot make themselves admin');
    t.same(
      (await call(app, `/api/users/${bob}/roles`)).json().map((r: { name: string }) => r.name),
      ['Support'],
      'nothing granted',
    );
  });
});
