/**
 * The plugin through the host, as it is installed (the test kit loads the package by its npm name
 * when the host has it in node_modules, else this folder's build): SQLite, or MariaDB with TEST_MYSQL_URL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from '@community-platform/sdk';
import { pluginPackage, startTestHost } from '@community-platform/sdk/testing';

const plugins = { hello: { enabled: true, package: pluginPackage(import.meta.url), greeting: 'Welcome' } };

test('greetings are stored in its table and served under /api/hello', async (t) => {
  const host = await startTestHost(t, { plugins });
  let res = await host.call('/api/hello/greetings', { body: { name: 'Steve' } });
  assert.equal(res.statusCode, 201, res.body);
  res = await host.call('/api/hello/greetings');
  assert.deepEqual(res.json(), [{ id: '1', text: 'Welcome, Steve!' }]);
  res = await host.call('/api/hello/greetings', { key: null });
  assert.equal(res.statusCode, 401, 'the host guards its routes');
});

test('its errors answer with their code and status, and change nothing', async (t) => {
  const host = await startTestHost(t, { plugins, config: { site: { helloPunctuation: '.' } } });
  let res = await host.call('/api/hello/greetings/7');
  assert.equal(res.statusCode, 404);
  assert.deepEqual(res.json(), { status: false, error: 'GREETING_NOT_FOUND', message: 'No greeting with ID 7.' });
  res = await host.call('/api/hello/greetings', { body: { name: '' } });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().error, 'VALIDATION_ERROR');
  assert.deepEqual((await host.call('/api/hello/greetings')).json(), []);
});

test('its migration ran, once', async (t) => {
  const host = await startTestHost(t, { plugins });
  const done = await host.app.db.query<{ name: string }>(sql`select name from core_migrations`);
  assert.equal(done.filter((m) => m.name.endsWith('_hello_init')).length, 1);
});
