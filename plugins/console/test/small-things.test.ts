/** Small things an owner met on the second day (issue 49): optional site settings not marked required, the empty chart's axis. */
import t from 'tap';
import { build } from '../../../test/helper.ts';
import { drawChart } from '../chart.ts';
import { grant, register, role, signInByForm } from './browser.ts';

const FEATURES = ['users', 'auth', 'credits', 'store', 'promotions', 'console', 'storefront'];

t.test('the site settings form marks required only the settings that refuse empty', async (t) => {
  const app = await build(t, { features: FEATURES });
  await grant(app, await register(app, 'Alice'), await role(app, 'Admin'));
  const cookie = String((await signInByForm(app, 'Alice')).headers['set-cookie']).match(/console_session=[0-9a-f]{64}/)![0];
  const html = (await app.inject({ url: '/console/settings', headers: { cookie } })).body;
  const field = (name: string) => html.match(new RegExp(`<(input|textarea|select) [^>]*name="${name}"[^>]*>`))?.[0] ?? '';
  for (const name of ['storefrontDescription', 'storefrontLogo', 'promotionsGoalStart', 'promotionsGoalEnd']) {
    t.ok(field(name), `${name} is on the form`);
    t.notMatch(field(name), / required/, `${name} may stay empty`);
  }
  t.match(field('promotionsGoalAmount'), / required/, 'a number is required');
});

t.test('an empty money chart reads 0.00 to 1.00, an empty count chart 0 to 2', async (t) => {
  const labels = ['2026-11-01', '2026-11-02', '2026-11-03'];
  t.same(
    drawChart({ heading: 'Revenue', money: true, values: [0, 0, 0], labels }, 0).grid.map((g) => g.label),
    ['0.00', '0.50', '1.00'],
  );
  t.same(
    drawChart({ heading: 'Orders', values: [0, 0, 0], labels }, 1).grid.map((g) => g.label),
    ['0', '1', '2'],
  );
  t.same(
    drawChart({ heading: 'Revenue', money: true, values: [0, 1234, 0], labels }, 2).grid.map((g) => g.label),
    ['0.00', '10.00', '20.00'],
    'figures keep their scale',
  );
});
