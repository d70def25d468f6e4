/** The plain text part of a mail keeps its line breaks (issue 49: "Total: $15.20Follow its delivery…"). */
import t from 'tap';
import { Templates } from '../templates.ts';

t.test("a receipt's text part has each line on its own", async (t) => {
  const { text } = new Templates('').render('order-receipt', 'en', {
    name: 'Steve',
    orderId: 12,
    date: '2026-01-01 10:00',
    items: [
      { quantity: 1, productName: 'VIP' },
      { quantity: 2, productName: 'Sword' },
    ],
    total: '$15.20',
    link: 'http://127.0.0.1/orders/12',
    site: 'Craft',
    guest: false,
    test: false,
  });
  const lines = text.split('\n');
  t.ok(lines.includes('Total: $15.20'), 'the total is a line of its own');
  t.ok(lines.includes('  1 × VIP') && lines.includes('  2 × Sword'), 'each item is a line');
  t.match(text, /^Hello Steve,\n\n/, 'a blank line after the greeting');
  t.match(text, /\nFollow its delivery on your account page: http:\/\/127\.0\.0\.1\/orders\/12\n/);
  t.notMatch(text, /\n{3}/, 'never two blank lines');
});

t.test("a top-up receipt's text part has each line on its own", async (t) => {
  const { text } = new Templates('').render('topup-receipt', 'en', { name: 'Steve', amount: '$5.00', credits: '500', site: 'Craft' });
  t.match(text, /has arrived\.\n500/);
});
