/** The last use of a coupon and the last of a gift card's balance, decided by the database when buyers race for them. */
import t from 'tap';
import { onMysql } from '../../../test/helper.ts';
import { buy, coupon, giftCard, makeUser, read, rowCount, shop } from './fixtures.ts';

const db = onMysql ? 'MariaDB' : 'SQLite';
// A pool bigger than the MariaDB default, so the buys really run side by side there.
const config = { database: { poolSize: 12 } };

const outcomes = (answers: { statusCode: number; json(): any }[]) => {
  const seen: Record<string, number> = {};
  for (const res of answers) {
    const key = res.statusCode === 200 ? '200' : `${res.statusCode} ${res.json().error}`;
    seen[key] = (seen[key] ?? 0) + 1;
  }
  return seen;
};

t.test(`50 buyers racing for a coupon of 10 uses: exactly 10 get it (${db})`, async (t) => {
  const { app, sword } = await shop(t, { config });
  await coupon(app, { code: 'RUSH', kind: 'percent', value: 50, maxUses: 10, perPlayer: 1 });
  const buyers: number[] = [];
  for (let i = 0; i < 50; i++) buyers.push(await makeUser(app, `rush${i}`, 1000));
  const answers = await Promise.all(buyers.map((id) => buy(app, id, [sword], { coupon: 'rush' })));
  const seen = outcomes(answers);
  t.equal(seen['200'], 10, JSON.stringify(seen));
  t.same(
    Object.keys(seen).filter((k) => !['200', '409 PROMOTION_USED_UP'].includes(k)),
    [],
    'the others are told it is used up',
  );
  t.match(await read(app, '/api/admin/promotions/coupons'), [{ uses: '10', orders: '10' }]);
  t.equal(await rowCount(app, 'store_orders'), 10, 'no order without its use');
});

t.test(`one player racing himself for a coupon of one use per player gets it once (${db})`, async (t) => {
  const { app, sword } = await shop(t, { config });
  await coupon(app, { code: 'MINE', kind: 'fixed', value: '1.00', perPlayer: 1 });
  const steve = await makeUser(app, 'steve', 100_000);
  const answers = await Promise.all(Array.from({ length: 12 }, () => buy(app, steve, [sword], { coupon: 'MINE' })));
  t.equal(outcomes(answers)['200'], 1, JSON.stringify(outcomes(answers)));
});

t.test(`buyers racing to spend one gift card never take more than it holds (${db})`, async (t) => {
  const { app, sword } = await shop(t, { config });
  const card = await giftCard(app, '10.00');
  const buyers: number[] = [];
  // Each buy of the sword (4.00) asks the card for 4.00: two fit, a third would leave it below zero.
  for (let i = 0; i < 20; i++) buyers.push(await makeUser(app, `spend${i}`, 10_000));
  const answers = await Promise.all(buyers.map((id) => buy(app, id, [sword], { giftCard: card.code })));
  const seen = outcomes(answers);
  const shown = await read(app, `/api/admin/promotions/gift-cards/${card.id}`);
  const spent = shown.ledger.filter((l: { reason: string }) => l.reason === 'spend').reduce((sum: number, l: { delta: string }) => sum - Number(l.delta), 0);
  t.ok(Number(shown.balance) >= 0, `never below zero: ${shown.balance}`);
  t.equal(Number(shown.balance) + spent, 10, 'every cent that left is in the ledger');
  t.equal(seen['200'], await rowCount(app, 'store_orders'), JSON.stringify(seen));
  t.same(
    Object.keys(seen).filter((k) => !['200', '409 PROMOTION_USED_UP', '400 PROMOTION_INVALID'].includes(k)),
    [],
    JSON.stringify(seen),
  );
  t.ok(seen['200']! >= 2 && seen['200']! <= 3, 'two full spends and at most one of what was left');
});
