/**
 * The typed client at work: registers a player, gives them credits and reads the balance back.
 *   API_URL=http://127.0.0.1:8080 API_KEY=<an admin key> node client/example.ts [username]
 */
import { parseArgs } from 'node:util';
import { apiClient } from './index.ts';

const api = apiClient(process.env.API_URL ?? 'http://127.0.0.1:8080', process.env.API_KEY ?? '');
const username = parseArgs({ allowPositionals: true }).positionals[0] ?? 'Steve';

const registered = await api.POST('/api/auth/register', {
  body: { username, password: 'correct horse battery', email: `${username.toLowerCase()}@example.com`, ip: '127.0.0.1', useragent: 'client example' },
});
if (registered.error) throw new Error(`register: ${registered.error.error} ${registered.error.message}`);

const added = await api.POST('/api/credits/add', { body: { target_username: username, amount: '12.50' } });
if (added.error) throw new Error(`add credits: ${added.error.error} ${added.error.message}`);

const balance = await api.GET('/api/credits', { params: { query: { username } } });
if (balance.error) throw new Error(`balance: ${balance.error.error} ${balance.error.message}`);
console.log(`${username} has ${balance.data.credits} (${balance.data.raw_credits} as a number)`);
