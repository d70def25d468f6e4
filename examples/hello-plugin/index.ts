/**
 * A third-party feature. It needs the host only for types, so it never loads a second copy of it:
 * the host hands it the registry, events, database and its options at registration.
 * Enable it in config: "plugins": { "hello": { "enabled": true, "package": "community-plugin-hello" } }
 */
import { defineEntity, p } from '../../core/table.ts';
import { Type } from '@sinclair/typebox';
import type { FeatureDefinition } from 'community-platform/core';
import { init } from './migrations/init.ts';

const HelloGreeting = defineEntity({
  name: 'HelloGreeting',
  tableName: 'hello_greetings',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
  },
});

const options = Type.Object({
  greeting: Type.String({ default: 'Hello' }),
});

const Greeting = Type.Object({ id: Type.String(), text: Type.String() });

const hello: FeatureDefinition<typeof options> = {
  name: 'hello',
  options,
  entities: [HelloGreeting],
  migrations: [init],
  async register(app, { db, options: opts }) {
    app.get('/api/hello/greetings', {
      schema: { tags: ['hello'], response: { 200: Type.Array(Greeting) } },
    }, async () => {
      const rows = await db.query<{ id: number; name: string }>('select id, name from hello_greetings order by id');
      return rows.map((r) => ({ id: r.id, text: `${opts.greeting}, ${r.name}!` }));
    });
    app.post('/api/hello/greetings', {
      schema: {
        tags: ['hello'],
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 201: Type.Object({ status: Type.Literal(true), id: Type.String() }) },
      },
    }, async (request, reply) => {
      const { name } = request.body as { name: string };
      const { insertId } = await db.run('insert into hello_greetings (name) values (?)', [name]);
      return reply.code(201).send({ status: true, id: insertId });
    });
  },
};

export default hello;
