/**
 * The host's own sections: site settings and API keys. They belong to core, which runs without
 * the console and knows nothing of pages, so the console feature declares them in its own
 * definition, through the same `console` field as every feature (no second way to add a
 * section), and reaches core only through the registry (settings, API keys). Admins only.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { errorsFor, field, type ConsoleField, type ConsolePage, type ConsoleSection } from '../../core/console.ts';
import { apiKeysRef } from '../../core/api-keys.ts';
import type { SiteSetting } from '../../core/config.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp } from '../../core/format.ts';
import { toBool } from '../../core/schemas.ts';
import { settingsBody, type SettingsService } from '../../core/settings.ts';

type Shown = { values: Record<string, string>; errors: Record<string, string> };

/** The choices of a setting that is one of fixed values (`buyResponseStatus`: 200 or 201). */
const choicesOf = (schema: TSchema): unknown[] | undefined => {
  const choices = (schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
  return choices?.every((c) => c !== undefined) ? choices : undefined;
};

/** A setting's form field, by its type: a checkbox for a flag, a select for fixed values, a number field for a number. */
function fieldOf(name: string, { schema, label, hint }: SiteSetting): ConsoleField {
  const choices = choicesOf(schema);
  if (schema.type === 'boolean') return { name, label, type: 'checkbox', ...(hint ? { hint } : {}) };
  if (choices) return { name, label, type: 'select', options: choices.map((c) => ({ value: String(c), label: String(c) })), ...(hint ? { hint } : {}) };
  const numeric = schema.type === 'integer' || schema.type === 'number';
  return {
    name,
    label,
    ...(numeric ? { type: 'number' as const } : {}),
    // Only what the setting refuses empty is marked required (a logo, a description, the goal's days may stay empty).
    ...(numeric || !acceptsEmpty(schema) ? { required: true } : {}),
    ...(hint ? { hint } : {}),
  };
}

/** Whether a text setting takes `''`: no minimum length and a pattern (if any) that matches it. */
const acceptsEmpty = (schema: TSchema) =>
  schema.type === 'string' && !(schema.minLength > 0) && (schema.pattern === undefined || new RegExp(schema.pattern).test(''));

/**
 * The site settings form, made from the settings core and the features declare: the admin API's
 * schema, but fixed numeric values as the text a select sends; checkboxes last.
 */
function settingsForm(settings: SettingsService) {
  const declared = [...settings.declared()];
  const api = settingsBody(settings).properties as Record<string, TSchema>;
  const numericChoices = declared.filter(([, s]) => choicesOf(s.schema)?.every((c) => typeof c === 'number')).map(([k]) => k);
  const flags = declared.filter(([, s]) => s.schema.type === 'boolean').map(([k]) => k);
  const schema = Type.Partial(
    Type.Object(
      Object.fromEntries(
        declared.map(([k, s]) => [k, numericChoices.includes(k) ? Type.Union(choicesOf(s.schema)!.map((c) => Type.Literal(String(c)))) : api[k]!]),
      ),
    ),
  );
  const fields = declared.map(([k, s]) => fieldOf(k, s));
  return {
    schema,
    flags,
    numericChoices,
    names: declared.map(([k]) => k),
    fields: [...fields.filter((f) => f.type !== 'checkbox'), ...fields.filter((f) => f.type === 'checkbox')],
  };
}

export const siteSettingsSection: ConsoleSection = {
  id: 'settings',
  title: 'Site settings',
  order: 85,
  pages(pages, { settings }) {
    const form = settingsForm(settings);
    const page = (edit?: Shown): ConsolePage => {
      const s = settings.get();
      return {
        title: 'Site settings',
        status: edit ? 422 : 200,
        blocks: [
          {
            kind: 'form',
            id: 'site-settings',
            title: 'Site settings',
            action: pages.base,
            submit: 'Save settings',
            values: edit?.values ?? Object.fromEntries(Object.entries(s).map(([k, v]) => [k, String(v)])),
            errors: edit?.errors,
            fields: form.fields,
          },
        ],
      };
    };

    pages.get('', async () => page());

    pages.post(
      '',
      async ({ body, invalid, form: sent }) => {
        const values = { ...sent, ...Object.fromEntries(form.flags.map((k) => [k, toBool(sent[k]) ? 'true' : 'false'])) };
        if (invalid) return page({ values, errors: invalid });
        const b = body as Record<string, unknown>;
        try {
          await settings.update({
            ...b,
            ...Object.fromEntries(form.flags.map((k) => [k, toBool(sent[k])])),
            ...Object.fromEntries(form.numericChoices.filter((k) => b[k] !== undefined).map((k) => [k, Number(b[k])])),
          });
          return { redirect: pages.base, notice: 'Site settings saved.' };
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          // The settings service names the setting first (`timezone: …`, `Invalid setting currency: …`).
          const named = form.names.find((n) => new RegExp(`^(Invalid setting )?${n}\\b`).test(err.message));
          return page({ values, errors: { [named ?? '_form']: err.message } });
        }
      },
      { body: form.schema },
    );
  },
};

const KeyForm = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  scope: Type.String({ minLength: 1, maxLength: 255 }),
});

export const apiKeysSection: ConsoleSection = {
  id: 'api-keys',
  title: 'API keys',
  order: 88,
  pages(pages, { services, settings }) {
    const keys = services.get(apiKeysRef);
    const tz = () => settings.get().timezone;
    const when = (at: string | null) => (at ? displayTimestamp(at, tz()) : '');

    const page = async (add?: Shown, notice?: string): Promise<ConsolePage> => ({
      title: 'API keys',
      notice,
      status: add ? 422 : 200,
      blocks: [
        {
          kind: 'table',
          caption: 'API keys',
          empty: 'No API key yet (the API_KEY environment variable, if set, is not listed).',
          columns: [
            { key: 'name', label: 'Name' },
            { key: 'scopes', label: 'Scopes' },
            { key: 'created', label: 'Created' },
            { key: 'used', label: 'Last used' },
            { key: 'state', label: 'State' },
          ],
          rows: (await keys.list()).map((k) => ({
            name: k.name,
            scopes: k.scopes,
            created: when(k.createdAt),
            used: k.lastUsedAt ? when(k.lastUsedAt) : 'never',
            state: k.revokedAt
              ? `revoked ${when(k.revokedAt)}`
              : {
                  action: `${pages.base}/revoke?${new URLSearchParams({ name: k.name })}`,
                  label: `Revoke ${k.name}`,
                  confirm: `Revoke the API key ${k.name}? Whatever uses it stops working at once.`,
                },
          })),
        },
        {
          kind: 'form',
          id: 'new-api-key',
          title: 'New API key',
          action: pages.base,
          submit: 'Create API key',
          values: add?.values ?? { scope: 'api' },
          errors: add?.errors,
          fields: [
            { name: 'name', label: 'Name', required: true, hint: 'Who uses it, e.g. lobby-server: A-Z a-z 0-9 _ . - only.', autocomplete: 'off' },
            {
              name: 'scope',
              label: 'Scopes',
              required: true,
              hint:
                "Separated by spaces: api (every public route), admin (also /api/admin), a feature (store) or a feature's action (store:buy, " +
                'credits:read).',
            },
          ],
        },
      ],
    });

    pages.get('', async () => page());

    pages.post(
      '',
      async ({ body, invalid, form }) => {
        if (invalid) return page({ values: form, errors: invalid });
        const b = body as Static<typeof KeyForm>;
        try {
          const key = await keys.create(b.name.trim(), b.scope.split(/\s+/).filter(Boolean));
          // Shown on this page only, never stored in a redirect's notice cookie: only its hash is kept.
          return page(undefined, `API key ${b.name.trim()} created. Its key, shown only now: ${key}`);
        } catch (err) {
          return page({ values: form, errors: errorsFor(err, ['name', 'scope'], { CONFLICT: 'name' }) });
        }
      },
      { body: KeyForm },
    );

    pages.post('/revoke', async ({ query }) => {
      const name = field(query, 'name');
      const revoked = await keys.revoke(name);
      return { redirect: pages.base, notice: revoked ? `API key ${name} revoked.` : `There is no API key ${name} in use.` };
    });
  },
};
