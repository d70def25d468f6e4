/**
 * The OpenAPI document as the tools API users already have read it: Redocly's recommended lint,
 * swagger-parser's validation, and the promises the introduction makes about every route.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { ECHO_PLUGIN } from './fixtures.ts';
import { ADMIN_KEY, build, call, freshDatabaseUrl } from './helper.ts';
import { buildApp } from '../core/app.ts';
import { rootDir } from '../core/config.ts';
import { operationId } from '../core/openapi.ts';

type Operation = {
  operationId?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { description?: string }>;
};

t.test('the document passes the recommended lint and the parser, with every feature on', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'GET', url: '/docs/json' });
  t.equal(res.statusCode, 200);
  const doc = res.json();
  t.equal(doc.openapi, '3.1.0');
  t.strictSame(doc.info.license, { name: 'MIT', identifier: 'MIT' }, 'the license, as package.json and LICENSE name it');

  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: res.body, absoluteRef: 'openapi.json', config });
  const findings = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`);
  t.strictSame(findings, [], 'no errors and no warnings');

  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'swagger-parser validates it (every $ref resolves)');

  const ids = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      t.ok(op.operationId && !ids.has(op.operationId), `${where}: a unique operationId`);
      ids.add(op.operationId!);
      if (op.requestBody) {
        t.strictSame(
          Object.keys(op.requestBody.content).sort(),
          ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
          `${where}: the three body encodings`,
        );
      }
      for (const [status, response] of Object.entries(op.responses)) {
        t.notMatch(response.description ?? '', /^Default Response$/, `${where} ${status}: described`);
      }
      if (path.startsWith('/api/') && !op.security) t.match(op.responses['401']?.description, /INVALID_API_KEY/, `${where}: the key error is documented`);
      if (path.startsWith('/api/admin/')) t.match(op.responses['403']?.description, /FORBIDDEN/, `${where}: the scope error is documented`);
    }
  }
  t.ok(ids.size > 90, `${ids.size} operations`);
});

t.test('operationIds read as the method and the path', async (t) => {
  t.equal(operationId('GET', '/api/users/{id}/roles'), 'getUsersByIdRoles');
  t.equal(operationId('POST', '/api/credits/:user/set'), 'postCreditsByUserSet');
  t.equal(operationId('DELETE', '/api/admin/vote-links/{id}'), 'deleteAdminVoteLinksById');
  t.equal(operationId('GET', '/health'), 'getHealth');
});

type SchemaNode = {
  $ref?: string;
  type?: string;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
};

t.test('every value a success carries shows a realistic example, in the format the server sends', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
  const components = doc.components.schemas as Record<string, SchemaNode>;
  const resolve = (s: SchemaNode) => (s.$ref ? components[s.$ref.split('/').pop()!]! : s);
  const missing: string[] = [];
  const examples = new Map<string, unknown>();
  const walk = (node: SchemaNode, where: string, seen: Set<SchemaNode>) => {
    const s = resolve(node);
    if (seen.has(s)) return;
    seen.add(s);
    if (s.examples) examples.set(where, s.examples[0]);
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives && !s.examples) {
      for (const alt of alternatives) if (alt.type !== 'null') walk(alt, where, seen);
    } else if (s.type === 'object') {
      for (const [key, value] of Object.entries(s.properties ?? {})) walk(value, `${where}.${key}`, seen);
    } else if (s.type === 'array' && s.items) {
      walk(s.items, `${where}[]`, seen);
    } else if (['string', 'number', 'integer'].includes(s.type ?? '') && !s.examples && !s.enum && s.const === undefined) {
      missing.push(where);
    }
  };
  for (const [path, item] of Object.entries(
    doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: SchemaNode }> }> }>>,
  )) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const schema = response.content?.['application/json']?.schema;
        if (status.startsWith('2') && schema) walk(schema, `${method.toUpperCase()} ${path}`, new Set());
      }
    }
  }
  t.strictSame(missing, [], 'no field left to show "string"');

  // The lint (above) checks each example against its schema; these check they read as real values.
  const product = 'GET /api/store/categories/{id}.products[]';
  t.equal(examples.get(`${product}.price`), '4.99', 'a price is a two-place decimal string');
  t.match(examples.get(`${product}.id`), /^[0-9]+$/, 'ids are digit strings');
  t.match(examples.get(`${product}.creationDate`), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/, 'dates as the server writes them');
  t.equal(examples.get('GET /api/users.username'), 'Steve');
  t.match(examples.get('GET /api/credits.credits'), /^\d+\.\d{2} [A-Z]{3}$/, 'a formatted balance');
  t.match(examples.get('GET /api/credits/history[].delta'), /^-?\d+\.\d{2}$/);
});

t.test('under tests, an error answer its route does not document fails loudly', async (t) => {
  // Every test builds its app with this check on, so each failure any test drives is also a check
  // that the document lists the code under its status (test/helper.ts).
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  let res = await call(app, '/api/echo/undeclared');
  t.equal(res.statusCode, 500);
  t.equal(res.json().error, 'UNDECLARED_ERROR');
  t.match(res.json().message, /^GET \/api\/echo\/undeclared answered 404 ROLE_NOT_FOUND, which its OpenAPI document does not list/);
  res = await call(app, '/api/echo/domain');
  t.equal(res.statusCode, 404, 'a listed code passes');
  t.equal(res.json().error, 'ROLE_NOT_FOUND');
  res = await call(app, '/api/echo', { key: 'nope' });
  t.equal(res.statusCode, 401, 'codes every /api route has are listed without being named');
  res = await call(app, '/api/echo', { method: 'POST', headers: { 'content-type': 'text/csv' }, key: ADMIN_KEY });
  t.equal(res.statusCode, 415, 'so is a refused body, on a route without a body schema too');

  // A server as operators run it answers the code itself.
  const plain = await buildApp({
    env: { API_KEY: ADMIN_KEY, DATABASE_URL: await freshDatabaseUrl(t) },
    config: { log: { level: 'silent' }, plugins: ECHO_PLUGIN },
    logger: false,
  });
  t.teardown(() => plain.close());
  res = await call(plain, '/api/echo/undeclared');
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'ROLE_NOT_FOUND');
});

t.test('under tests, a plain JSON answer its schema would not give fails loudly, as a value, as text or as bytes', async (t) => {
  const app = await build(t, { features: [], config: { plugins: ECHO_PLUGIN } });
  for (const how of ['value', 'text', 'bytes']) {
    const res = await call(app, `/api/echo/plain/${how}`);
    t.equal(res.statusCode, 200, res.body);
    t.equal(res.body, '[{"id":"1"}]');
    t.match(res.headers['content-type'], /^application\/json; charset=utf-8/);
  }
  for (const [how, part] of [
    ['wrong-value', '[{"id":1}]'],
    ['wrong-text', '[{"id":"1","x":2}]'],
    ['wrong-bytes', '[{"id":"1","x":2}]'],
  ] as const) {
    const res = await call(app, `/api/echo/plain/${how}`);
    t.equal(res.statusCode, 500, how);
    t.notOk(res.body.includes(part), 'the wrong answer is not sent');
  }

  // A server as operators run it sends what the route made.
  const plain = await buildApp({
    env: { API_KEY: ADMIN_KEY, DATABASE_URL: await freshDatabaseUrl(t) },
    config: { log: { level: 'silent' }, plugins: ECHO_PLUGIN },
    logger: false,
  });
  t.teardown(() => plain.close());
  const res = await call(plain, '/api/echo/plain/wrong-text');
  t.equal(res.statusCode, 200);
  t.equal(res.body, '[{"id":"1","x":2}]');
});

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return ['test', 'migrations', 'cli', 'views', 'assets'].includes(name) ? [] : sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

t.test('every error code the code throws is documented on some route', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
  const documented = new Set<string>();
  for (const item of Object.values(doc.paths as Record<string, Record<string, { responses: Record<string, { description?: string }> }>>)) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (/^[45]/.test(status))
          for (const [code] of (response.description ?? '').matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{4,}\b/g)) documented.add(code);
      }
    }
  }
  // Only the console (its own HTML forms) throws these; no API route reaches them.
  const consoleOnly = (file: string) => /\/console\.ts$|plugins\/console\//.test(file);
  const thrown = new Map<string, string>();
  for (const file of [...sources(join(rootDir, 'core')), ...sources(join(rootDir, 'plugins'))]) {
    if (consoleOnly(file)) continue;
    for (const [, code] of readFileSync(file, 'utf8').matchAll(/new DomainError\('([A-Z_]+)'/g)) thrown.set(code!, relative(rootDir, file));
  }
  t.ok(thrown.size > 40, `${thrown.size} codes thrown`);
  const missing = [...thrown].filter(([code]) => !documented.has(code)).map(([code, file]) => `${code} (${file})`);
  t.strictSame(missing, [], 'each is listed under some route');
});
