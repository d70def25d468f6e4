/**
 * A third-party feature, shipped as an npm package built against @community-platform/sdk: what it
 * imports from there is the host's own (one registry, one DomainError), and the host hands it the
 * database, settings and its options at registration.
 * Enable it in config: "plugins": { "hello": { "enabled": true, "package": "community-plugin-hello" } }
 */
import { defineEntity, defineFeature, DomainError, p, sql, Type, type ConsoleSection, type SettingValues, type SiteSetting } from '@community-platform/sdk';
import { migrations } from './migrations/index.ts';

const HelloGreeting = defineEntity({
  name: 'HelloGreeting',
  tableName: 'hello_greetings',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
  },
});
const G = HelloGreeting.c;

const options = Type.Object({
  greeting: Type.String({ default: 'Hello' }),
});

const Greeting = Type.Object({ id: Type.String(), text: Type.String() });

/**
 * Its site settings: defaults from `site.<key>` in config, changed through PATCH /api/admin/settings
 * and the console's site settings. Keys are one namespace for every feature, so its own start with its name.
 */
const settings = {
  helloPunctuation: {
    schema: Type.Union([Type.Literal('!'), Type.Literal('.')], { default: '!', description: 'what ends a greeting' }),
    label: 'Greetings end with',
  },
} satisfies Record<string, SiteSetting>;

declare module '@community-platform/sdk' {
  interface SiteSettings extends SettingValues<typeof settings> {}
}

const NewGreeting = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) });

/**
 * Its section of the staff console (/console/hello): the greetings and a form adding one. Pages
 * are blocks the console renders; the form is checked with the same schema as the API route.
 */
const greetingsSection: ConsoleSection = {
  id: 'hello',
  title: 'Greetings',
  order: 90,
  pages(pages, { db }) {
    const list = async (errors?: Record<string, string>, values?: Record<string, string>) => ({
      title: 'Greetings',
      status: errors ? 422 : 200,
      blocks: [
        {
          kind: 'table' as const,
          caption: 'Names greeted',
          columns: [{ key: 'name', label: 'Name' }],
          rows: (await HelloGreeting.select(db, sql`order by ${G.id}`)).map((r) => ({ name: r.name })),
        },
        {
          kind: 'form' as const,
          id: 'new-greeting',
          title: 'Greet someone',
          action: pages.base,
          submit: 'Add',
          errors,
          values,
          fields: [{ name: 'name', label: 'Name', required: true }],
        },
      ],
    });
    pages.get('', async () => list());
    pages.post(
      '',
      async ({ body, invalid, form }) => {
        if (invalid) return list(invalid, form);
        await HelloGreeting.insert(db, { name: (body as { name: string }).name });
        return { redirect: pages.base, notice: 'Greeting added.' };
      },
      { body: NewGreeting },
    );
  },
};

export default defineFeature({
  name: 'hello',
  options,
  settings,
  // Its own error codes with their HTTP status; core has only the generic ones (VALIDATION_ERROR, NOT_FOUND, …).
  errors: { GREETING_NOT_FOUND: 404 },
  entities: [HelloGreeting],
  migrations,
  async register(app, { db, options: opts, settings: site }) {
    const text = (name: string) => `${opts.greeting}, ${name}${site.get().helloPunctuation}`;
    app.get(
      '/api/hello/greetings',
      {
        schema: { tags: ['hello'], response: { 200: Type.Array(Greeting) } },
      },
      async () => {
        const rows = await HelloGreeting.select(db, sql`order by ${G.id}`);
        return rows.map((r) => ({ id: r.id, text: text(r.name) }));
      },
    );
    app.get(
      '/api/hello/greetings/:id',
      {
        schema: { tags: ['hello'], params: Type.Object({ id: Type.Integer({ minimum: 1 }) }), response: { 200: Greeting }, errors: ['GREETING_NOT_FOUND'] },
      },
      async (request) => {
        const { id } = request.params as { id: number };
        const row = await HelloGreeting.find(db, id);
        if (!row) throw new DomainError('GREETING_NOT_FOUND', `No greeting with ID ${id}.`);
        return { id: row.id, text: text(row.name) };
      },
    );
    app.post(
      '/api/hello/greetings',
      {
        schema: {
          tags: ['hello'],
          body: NewGreeting,
          response: { 201: Type.Object({ status: Type.Literal(true), id: Type.String() }) },
        },
      },
      async (request, reply) => {
        const { name } = request.body as { name: string };
        const id = await HelloGreeting.insert(db, { name });
        return reply.code(201).send({ status: true, id });
      },
    );
  },
  console: [greetingsSection],
});
