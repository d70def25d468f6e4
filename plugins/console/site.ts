/**
 * The host's own sections: site settings and API keys. They belong to core, which runs without
 * the console and knows nothing of pages, so the console feature declares them in its own
 * definition, through the same `console` field as every feature (no second way to add a
 * section), and reaches core only through the registry (settings, API keys). Admins only.
 */
import { Type, type Static } from '@sinclair/typebox';
import { errorsFor, field, type ConsolePage, type ConsoleSection } from '../../core/console.ts';
import { apiKeysRef } from '../../core/api-keys.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp } from '../../core/format.ts';
import { toBool } from '../../core/schemas.ts';
import { SettingsBody } from '../../core/settings.ts';

type Shown = { values: Record<string, string>; errors: Record<string, string> };

/** The admin API's settings, but the reply status as the text a select sends. */
const SettingsForm = Type.Partial(Type.Object({
  ...SettingsBody.properties, buyResponseStatus: Type.Union([Type.Literal('200'), Type.Literal('201')]),
}));
const FLAGS = ['twoFactorEnabled', 'registrationEmailRequired'] as const;
const SETTING_NAMES = Object.keys(SettingsBody.properties);

export const siteSettingsSection: ConsoleSection = {
  id: 'settings',
  title: 'Site settings',
  order: 85,
  pages(pages, { settings }) {
    const page = (edit?: Shown): ConsolePage => {
      const s = settings.get();
      return {
        title: 'Site settings', status: edit ? 422 : 200,
        blocks: [{
          kind: 'form', id: 'site-settings', title: 'Site settings', action: pages.base, submit: 'Save settings',
          values: edit?.values ?? Object.fromEntries(Object.entries(s).map(([k, v]) => [k, String(v)])), errors: edit?.errors,
          fields: [
            { name: 'currency', label: 'Currency', required: true, hint: 'Three capital letters (ISO 4217): what real-money prices are in.' },
            { name: 'timezone', label: 'Time zone', required: true, hint: 'An IANA name, e.g. Europe/Berlin: dates are shown and read in it.' },
            { name: 'registerLimit', label: 'Accounts per IP', type: 'number', required: true, hint: '0 = no limit.' },
            { name: 'cashbackPercent', label: 'Cashback (%)', type: 'number', required: true, hint: 'Credits given back on each purchase, 0 to 100.' },
            { name: 'buyResponseStatus', label: 'Status of a successful buy', type: 'select', options: [{ value: '200', label: '200' }, { value: '201', label: '201' }] },
            { name: 'twoFactorEnabled', label: 'Players may turn on two-factor sign-in', type: 'checkbox' },
            { name: 'registrationEmailRequired', label: 'An email is required to register', type: 'checkbox' },
          ],
        }],
      };
    };

    pages.get('', async () => page());

    pages.post('', async ({ body, invalid, form }) => {
      const values = { ...form, ...Object.fromEntries(FLAGS.map((k) => [k, toBool(form[k]) ? 'true' : 'false'])) };
      if (invalid) return page({ values, errors: invalid });
      const b = body as Static<typeof SettingsForm>;
      try {
        await settings.update({
          ...b, ...Object.fromEntries(FLAGS.map((k) => [k, toBool(form[k])])),
          ...(b.buyResponseStatus === undefined ? {} : { buyResponseStatus: Number(b.buyResponseStatus) }),
        });
        return { redirect: pages.base, notice: 'Site settings saved.' };
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        // The settings service names the setting first (`timezone: …`, `Invalid setting currency: …`).
        const named = SETTING_NAMES.find((n) => new RegExp(`^(Invalid setting )?${n}\\b`).test(err.message));
        return page({ values, errors: { [named ?? '_form']: err.message } });
      }
    }, { body: SettingsForm });
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
      title: 'API keys', notice, status: add ? 422 : 200,
      blocks: [
        {
          kind: 'table', caption: 'API keys', empty: 'No API key yet (the API_KEY environment variable, if set, is not listed).',
          columns: [{ key: 'name', label: 'Name' }, { key: 'scopes', label: 'Scopes' }, { key: 'created', label: 'Created' }, { key: 'used', label: 'Last used' }, { key: 'state', label: 'State' }],
          rows: (await keys.list()).map((k) => ({
            name: k.name, scopes: k.scopes, created: when(k.createdAt), used: k.lastUsedAt ? when(k.lastUsedAt) : 'never',
            state: k.revokedAt
              ? `revoked ${when(k.revokedAt)}`
              : { action: `${pages.base}/revoke?${new URLSearchParams({ name: k.name })}`, label: `Revoke ${k.name}`, confirm: `Revoke the API key ${k.name}? Whatever uses it stops working at once.` },
          })),
        },
        {
          kind: 'form', id: 'new-api-key', title: 'New API key', action: pages.base, submit: 'Create API key',
          values: add?.values ?? { scope: 'api' }, errors: add?.errors,
          fields: [
            { name: 'name', label: 'Name', required: true, hint: 'Who uses it, e.g. lobby-server: A-Z a-z 0-9 _ . - only.', autocomplete: 'off' },
            { name: 'scope', label: 'Scopes', required: true, hint: 'Separated by spaces: api (every public route), admin (also /api/admin), a feature (store) or a feature\'s action (store:buy, credits:read).' },
          ],
        },
      ],
    });

    pages.get('', async () => page());

    pages.post('', async ({ body, invalid, form }) => {
      if (invalid) return page({ values: form, errors: invalid });
      const b = body as Static<typeof KeyForm>;
      try {
        const key = await keys.create(b.name.trim(), b.scope.split(/\s+/).filter(Boolean));
        // Shown on this page only, never stored in a redirect's notice cookie: only its hash is kept.
        return page(undefined, `API key ${b.name.trim()} created. Its key, shown only now: ${key}`);
      } catch (err) {
        return page({ values: form, errors: errorsFor(err, ['name', 'scope'], { CONFLICT: 'name' }) });
      }
    }, { body: KeyForm });

    pages.post('/revoke', async ({ query }) => {
      const name = field(query, 'name');
      const revoked = await keys.revoke(name);
      return { redirect: pages.base, notice: revoked ? `API key ${name} revoked.` : `There is no API key ${name} in use.` };
    });
  },
};
