/**
 * What only the admin API could do before, in the console: roles, ticket categories and quick
 * answers created, edited and deleted in a real browser, each checked through the API (that
 * support staff reach none of these pages is in sections.test.ts).
 */
import t from 'tap';
import { call } from '../../../test/helper.ts';
import { hasChromium, notice, signIn, skipReason, staffBrowser } from './browser.ts';

t.test('roles, ticket categories and quick answers in chromium', { skip: hasChromium ? false : skipReason }, async (t) => {
  const { app, base, page, menu, helperId } = await staffBrowser(t);

  await signIn(page, base, 'Alice');
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  await t.test('a role is created, edited and deleted', async (t) => {
    await menu.getByRole('link', { name: 'Roles' }).click();
    const form = page.locator('#new-role');
    await page.locator('#new-role-name').fill('VIP Gold');
    await page.locator('#new-role-priority').fill('10');
    await page.locator('#new-role-usernameCSS').fill('color: gold');
    await form.getByRole('button', { name: 'Create role' }).click();
    await notice(page, /Role VIP Gold created/);
    const made = (await call(app, '/api/admin/roles')).json().find((r: { slug: string }) => r.slug === 'vip-gold');
    t.match(made, { name: 'VIP Gold', slug: 'vip-gold', priority: '10', usernameCSS: 'color: gold' }, 'through the API, the slug made from the name');

    // A slug another role has is refused beside the field, and nothing changes.
    await page.getByRole('link', { name: 'VIP Gold' }).click();
    await page.locator('#edit-role-slug').fill('admin');
    await page.getByRole('button', { name: 'Save role' }).click();
    await page.locator('#edit-role-slug-error').waitFor();
    t.equal((await call(app, `/api/admin/roles/${made.id}`)).json().slug, 'vip-gold', 'the refused edit changed nothing');

    await page.locator('#edit-role-slug').fill('vip');
    await page.locator('#edit-role-chatRoleID').fill('123456789012345678');
    await page.locator('#edit-role-usernameCSS').fill('');
    await page.getByRole('button', { name: 'Save role' }).click();
    await notice(page, /Role VIP Gold saved/);
    t.match(
      (await call(app, `/api/admin/roles/${made.id}`)).json(),
      { slug: 'vip', chatRoleID: '123456789012345678', usernameCSS: null },
      'an emptied CSS field clears it',
    );

    await page.getByRole('button', { name: 'Delete VIP Gold' }).click();
    await notice(page, /Role VIP Gold deleted/);
    t.equal((await call(app, `/api/admin/roles/${made.id}`)).statusCode, 404);
  });

  await t.test('a ticket category makes a fresh install take tickets; quick answers are kept', async (t) => {
    const ticket = { accountID: String(helperId), categoryID: '1', title: 'My rank', message: 'Not received.' };
    t.match((await call(app, '/api/support/tickets', { body: ticket })).json(), { error: 'CATEGORY_NOT_FOUND' }, 'no category yet');

    await menu.getByRole('link', { name: 'Support desk' }).click();
    await page.getByRole('link', { name: 'Ticket categories' }).click();
    await page.locator('#new-category-name').fill('Store');
    await page.locator('#new-category').getByRole('button', { name: 'Create category' }).click();
    await notice(page, /Category Store created/);
    await page.getByRole('link', { name: 'Store', exact: true }).click();
    await page.locator('#edit-category-name').fill('Store and ranks');
    await page.getByRole('button', { name: 'Save category' }).click();
    await notice(page, /Category Store and ranks saved/);
    const [category] = (await call(app, '/api/support/categories')).json();
    t.equal(category.name, 'Store and ranks');
    t.equal((await call(app, '/api/support/tickets', { body: { ...ticket, categoryID: category.id } })).statusCode, 200, 'a ticket is taken now');

    await page.getByRole('link', { name: 'Quick answers' }).click();
    const answer = page.locator('#new-quick-answer');
    await answer.getByRole('button', { name: 'Create quick answer' }).click();
    await page.locator('#new-quick-answer-title-error').waitFor();
    await page.locator('#new-quick-answer-title').fill('Rank not received');
    await page.locator('#new-quick-answer-content').fill('Rejoin the server: ranks are given on join.');
    await answer.getByRole('button', { name: 'Create quick answer' }).click();
    await notice(page, /Quick answer Rank not received created/);
    await page.getByRole('link', { name: 'Rank not received' }).click();
    await page.locator('#edit-quick-answer-content').fill('Rejoin the server.');
    await page.getByRole('button', { name: 'Save quick answer' }).click();
    await notice(page, /saved/);
    t.match((await call(app, '/api/admin/support/answers')).json(), [{ title: 'Rank not received', content: 'Rejoin the server.' }], 'through the API');
    await page.getByRole('button', { name: 'Delete Rank not received' }).click();
    await notice(page, /Quick answer Rank not received deleted/);
    t.same((await call(app, '/api/admin/support/answers')).json(), []);

    // A category that holds tickets is kept, saying why.
    await page.getByRole('link', { name: 'Ticket categories' }).click();
    await page.getByRole('button', { name: 'Delete Store and ranks' }).click();
    await page.getByText(/still holds 1 ticket/).waitFor();
    t.equal((await call(app, '/api/support/categories')).json().length, 1, 'not deleted');
  });
});
