/**
 * The OpenAPI document as the tools API users already have read it: Redocly's recommended lint,
 * swagger-parser's validation, and the promises the introduction makes about every route.
 */
import t from 'tap';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { build } from './helper.ts';
import { operationId } from '../core/openapi.ts';

type Operation = { operationId?: string; security?: unknown[]; requestBody?: { content: Record<string, unknown> }; responses: Record<string, { description?: string }> };

t.test('the document passes the recommended lint and the parser, with every feature on', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'GET', url: '/docs/json' });
  t.equal(res.statusCode, 200);
  const doc = res.json();
  t.equal(doc.openapi, '3.1.0');

  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: res.body, absoluteRef: 'openapi.json', config });
  // The project's license is named in package.json once it is chosen; until then the document
  // cannot name one, and that is the only finding allowed.
  const findings = problems.filter((p) => p.ruleId !== 'info-license')
    .map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`);
  t.strictSame(findings, [], 'no errors and no warnings');

  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'swagger-parser validates it (every $ref resolves)');

  const ids = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      t.ok(op.operationId && !ids.has(op.operationId), `${where}: a unique operationId`);
      ids.add(op.operationId!);
      if (op.requestBody) {
        t.strictSame(Object.keys(op.requestBody.content).sort(), ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'], `${where}: the three body encodings`);
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
