/**
 * The README's first day gets an owner to a working install without the server's log or a page
 * saying otherwise (issue 49): the admin API key the start log asks for is made, the webhook
 * secret is where the README says, and the engine warnings of `npm install` are explained.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { rootDir } from '../core/config.ts';

const read = (path: string) => readFileSync(join(rootDir, path), 'utf8');
const readme = read('README.md');
const firstDay = readme.slice(readme.indexOf('**First day**'), readme.indexOf('Tested on'));

t.test('the first day makes the admin API key the start log asks for', async (t) => {
  const asked = read('core/main.ts').match(/run `(npm run keys -- create [^`]+)`/)?.[1];
  t.ok(asked, 'the start log names a command');
  t.ok(firstDay.includes(`\`${asked}\``), `the first day runs ${asked}`);
});

t.test("the webhook secret is where the README says: on the endpoint's Deliveries page", async (t) => {
  t.match(firstDay, /signing\s+secret \(`whsec_…`\) is on the endpoint's \*Deliveries\* page/);
  const consolePages = read('plugins/notifications/console.ts');
  const deliveriesPage = consolePages.slice(consolePages.indexOf("pages.get('/:id/deliveries'"));
  t.match(deliveriesPage.slice(0, 800), /label: 'signing secret'/, 'the deliveries page shows it');
  t.notMatch(read('docs/features/notifications.md'), /secret \(shown on its page\)/);
});

t.test("npm install's engine warnings under an older Node are explained; the first lines stay", async (t) => {
  t.match(readme, /npm warn EBADENGINE/);
  t.match(readme, /^# Community platform\n\n```sh\nnpm install && npm start {4}# set up and run the server/);
});
