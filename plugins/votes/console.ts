/**
 * The votes feature's console section: the vote links (a server-list site each), added, changed
 * and deleted with the admin API's schemas, so a page refuses what the API refuses.
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, type ConsoleField, type ConsolePage, type ConsoleSection, idOf } from '../../core/console.ts';
import type { VoteLinkRow, VotesService } from './contract.ts';
import { CreateLinkBody } from './schemas.ts';

type Shown = { values: Record<string, string>; errors: Record<string, string> };

const FIELDS: ConsoleField[] = [
  { name: 'name', label: 'Name', required: true },
  { name: 'link', label: 'Link', required: true, hint: "An http(s) address; {username} is replaced by the voter's name." },
];

export const voteLinksSection: ConsoleSection<unknown, VotesService> = {
  id: 'vote-links',
  title: 'Vote links',
  order: 75,
  pages(pages, _ctx, votes) {
    const overview = async (add?: Shown): Promise<ConsolePage> => ({
      title: 'Vote links',
      status: add ? 422 : 200,
      blocks: [
        {
          kind: 'table',
          caption: 'Vote links',
          empty: 'No vote link yet.',
          columns: [
            { key: 'name', label: 'Name' },
            { key: 'link', label: 'Link' },
            { key: 'delete', label: 'Delete' },
          ],
          rows: (await votes.list()).map((l) => ({
            name: { text: l.name, href: `${pages.base}/${l.id}` },
            link: l.link,
            delete: { action: `${pages.base}/${l.id}/delete`, label: `Delete ${l.name}`, confirm: `Delete the vote link ${l.name}?` },
          })),
        },
        {
          kind: 'form',
          id: 'new-vote-link',
          title: 'New vote link',
          action: pages.base,
          submit: 'Add vote link',
          values: add?.values,
          errors: add?.errors,
          fields: FIELDS,
        },
      ],
    });

    const editPage = (l: VoteLinkRow, edit?: Shown): ConsolePage => ({
      title: l.name,
      status: edit ? 422 : 200,
      blocks: [
        { kind: 'links', items: [{ label: 'All vote links', href: pages.base }] },
        {
          kind: 'form',
          id: 'edit-vote-link',
          title: 'Edit vote link',
          action: `${pages.base}/${l.id}`,
          submit: 'Save vote link',
          values: edit?.values ?? { name: l.name, link: l.link },
          errors: edit?.errors,
          fields: FIELDS,
        },
      ],
    });

    pages.get('', async () => overview());

    pages.post(
      '',
      async ({ body, invalid, form }) => {
        if (invalid) return overview({ values: form, errors: invalid });
        try {
          const l = await votes.create(body as Static<typeof CreateLinkBody>);
          return { redirect: pages.base, notice: `Vote link ${l.name} added.` };
        } catch (err) {
          return overview({ values: form, errors: errorsFor(err, ['name', 'link']) });
        }
      },
      { body: CreateLinkBody },
    );

    pages.get('/:id', async ({ params }) => editPage(await votes.get(idOf(params.id))));

    pages.post(
      '/:id',
      async ({ params, body, invalid, form }) => {
        const l = await votes.get(idOf(params.id));
        if (invalid) return editPage(l, { values: form, errors: invalid });
        try {
          const saved = await votes.update(Number(l.id), body as Static<typeof CreateLinkBody>);
          return { redirect: pages.base, notice: `Vote link ${saved.name} saved.` };
        } catch (err) {
          return editPage(l, { values: form, errors: errorsFor(err, ['name', 'link']) });
        }
      },
      { body: CreateLinkBody },
    );

    pages.post('/:id/delete', async ({ params }) => {
      const l = await votes.get(idOf(params.id));
      await votes.delete(Number(l.id));
      return { redirect: pages.base, notice: `Vote link ${l.name} deleted.` };
    });
  },
};
