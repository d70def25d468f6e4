/**
 * The bazaar feature's console section: the item servers players store items on, created,
 * changed and deleted with the admin API's schemas (a server that still stores items is switched
 * off instead, as the API says).
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, type ConsoleField, type ConsolePage, type ConsoleSection, idOf } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { toBool } from '../../core/schemas.ts';
import type { BazaarService, ServerRow } from './contract.ts';
import { CreateServerBody, UpdateServerBody } from './schemas.ts';

type Shown = { values: Record<string, string>; errors: Record<string, string> };

const FIELDS: ConsoleField[] = [
  { name: 'name', label: 'Name', required: true },
  { name: 'slug', label: 'Slug', hint: 'Lower-case letters, digits, - and _; made from the name when empty.' },
  { name: 'imageID', label: 'Image ID', hint: 'The item shown for the server in game, e.g. DIAMOND_SWORD.' },
  { name: 'imageType', label: 'Image type' },
  { name: 'priority', label: 'Priority', type: 'number', hint: 'Low first.' },
  { name: 'isActive', label: 'Active', type: 'checkbox' },
];

const withBox = (form: Record<string, string>) => ({ ...form, isActive: toBool(form.isActive) ? 'true' : 'false' });
const errors = (err: unknown) => errorsFor(err, Object.keys(CreateServerBody.properties), { CONFLICT: 'slug' });

/** Bazaar server ids are 32-bit integers. */
const serverId = (text: string | undefined) => idOf(text, 9);

export const bazaarSection: ConsoleSection<unknown, BazaarService> = {
  id: 'bazaar',
  title: 'Bazaar servers',
  order: 72,
  pages(pages, _ctx, bazaar) {
    const overview = async (add?: Shown): Promise<ConsolePage> => ({
      title: 'Bazaar servers',
      status: add ? 422 : 200,
      blocks: [
        {
          kind: 'table',
          caption: 'Item servers',
          empty: 'No bazaar server yet.',
          columns: [
            { key: 'id', label: 'ID', numeric: true },
            { key: 'name', label: 'Name' },
            { key: 'slug', label: 'Slug' },
            { key: 'priority', label: 'Priority', numeric: true },
            { key: 'active', label: 'Active' },
          ],
          rows: (await bazaar.listServers()).map((s) => ({
            id: s.id,
            name: { text: s.name, href: `${pages.base}/${s.id}` },
            slug: s.slug,
            priority: s.priority,
            active: s.isActive === '1' ? 'yes' : 'no',
          })),
        },
        {
          kind: 'form',
          id: 'new-bazaar-server',
          title: 'New item server',
          action: pages.base,
          submit: 'Create server',
          values: add?.values ?? { isActive: 'true', priority: '0' },
          errors: add?.errors,
          fields: FIELDS,
        },
      ],
    });

    const editPage = (s: ServerRow, edit?: Shown): ConsolePage => ({
      title: s.name,
      status: edit ? 422 : 200,
      blocks: [
        { kind: 'links', items: [{ label: 'All bazaar servers', href: pages.base }] },
        {
          kind: 'form',
          id: 'edit-bazaar-server',
          title: 'Edit item server',
          action: `${pages.base}/${s.id}`,
          submit: 'Save server',
          values: edit?.values ?? {
            name: s.name,
            slug: s.slug,
            imageID: s.imageID,
            imageType: s.imageType,
            priority: s.priority,
            isActive: s.isActive === '1' ? 'true' : 'false',
          },
          errors: edit?.errors,
          fields: FIELDS,
        },
        {
          kind: 'form',
          id: 'delete-bazaar-server',
          title: 'Delete item server',
          action: `${pages.base}/${s.id}/delete`,
          submit: 'Delete server',
          fields: [],
          confirm: `Delete ${s.name}? Only a server that stores no item can be deleted.`,
        },
      ],
    });

    pages.get('', async () => overview());

    pages.post(
      '',
      async ({ body, invalid, form }) => {
        const values = withBox(form);
        if (invalid) return overview({ values, errors: invalid });
        try {
          const s = await bazaar.createServer({ ...(body as Static<typeof CreateServerBody>), isActive: toBool(form.isActive) });
          return { redirect: pages.base, notice: `Bazaar server ${s.name} created (ID ${s.id}).` };
        } catch (err) {
          return overview({ values, errors: errors(err) });
        }
      },
      { body: CreateServerBody },
    );

    pages.get('/:id', async ({ params }) => editPage(await bazaar.getServer(serverId(params.id))));

    pages.post(
      '/:id',
      async ({ params, body, invalid, form }) => {
        const s = await bazaar.getServer(serverId(params.id));
        const values = withBox(form);
        if (invalid) return editPage(s, { values, errors: invalid });
        const b = body as Static<typeof UpdateServerBody>;
        try {
          // Emptied text fields clear them, as the form shows them empty; an unticked box is false.
          const saved = await bazaar.updateServer(Number(s.id), {
            ...b,
            imageID: b.imageID ?? '',
            imageType: b.imageType ?? '',
            priority: b.priority ?? 0,
            isActive: toBool(form.isActive),
          });
          return { redirect: `${pages.base}/${s.id}`, notice: `Bazaar server ${saved.name} saved.` };
        } catch (err) {
          return editPage(s, { values, errors: errors(err) });
        }
      },
      { body: UpdateServerBody },
    );

    pages.post('/:id/delete', async ({ params }) => {
      const s = await bazaar.getServer(serverId(params.id));
      try {
        await bazaar.deleteServer(Number(s.id));
      } catch (err) {
        if (err instanceof DomainError && err.code === 'CONFLICT') return { redirect: `${pages.base}/${s.id}`, notice: `Not deleted: ${err.message}` };
        throw err;
      }
      return { redirect: pages.base, notice: `Bazaar server ${s.name} deleted.` };
    });
  },
};
