/**
 * The imports console section: start a LeaderOS import (or a dry run) and follow it; every run
 * stays listed with its report.
 */
import { idOf, type ConsoleBlock, type ConsolePage, type ConsoleSection } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import type { ImportRun, ImportsService } from './contract.ts';

type Shown = { values: Record<string, string>; errors: Record<string, string> };

function counts(run: ImportRun): ConsoleBlock {
  const { created, skipped } = run.report;
  const kinds = [...new Set([...Object.keys(created), ...Object.keys(skipped)])].sort();
  return {
    kind: 'table',
    caption: run.dryRun ? 'What it would bring' : 'What it brought',
    empty: run.status === 'running' ? 'Nothing yet.' : 'Nothing.',
    columns: [
      { key: 'kind', label: 'Kind' },
      { key: 'created', label: run.dryRun ? 'New' : 'Brought', numeric: true },
      { key: 'skipped', label: 'Brought before', numeric: true },
    ],
    rows: kinds.map((kind) => ({ kind, created: String(created[kind] ?? 0), skipped: String(skipped[kind] ?? 0) })),
  };
}

export const importsSection: ConsoleSection<unknown, ImportsService> = {
  id: 'imports',
  title: 'Imports',
  order: 95,
  pages(pages, _ctx, imports) {
    const overview = async (start?: Shown): Promise<ConsolePage> => ({
      title: 'Imports',
      status: start ? 422 : 200,
      blocks: [
        {
          kind: 'form',
          id: 'new-import',
          title: 'Import from LeaderOS',
          action: pages.base,
          submit: 'Start import',
          values: start?.values,
          errors: start?.errors,
          fields: [
            { name: 'url', label: "The site's address", required: true, hint: 'https://shop.example', autocomplete: 'off' },
            {
              name: 'apiKey',
              label: "The site's API key",
              type: 'password',
              required: true,
              autocomplete: 'off',
              hint: "From the site's settings; it is not kept.",
            },
            { name: 'dryRun', label: 'Dry run: report what it would bring, write nothing', type: 'checkbox' },
          ],
        },
        {
          kind: 'table',
          caption: 'Runs',
          empty: 'No import yet.',
          columns: [
            { key: 'started', label: 'Started' },
            { key: 'source', label: 'Source' },
            { key: 'status', label: 'Status' },
          ],
          rows: (await imports.runs(50)).map((r) => ({
            started: { text: r.startedAt, href: `${pages.base}/${r.id}` },
            source: r.source,
            status: `${r.status}${r.dryRun ? ' (dry run)' : ''}`,
          })),
        },
      ],
    });

    pages.get('', async () => overview());

    pages.post('', async ({ form }) => {
      const url = (form.url ?? '').trim();
      const apiKey = (form.apiKey ?? '').trim();
      const errors: Record<string, string> = {};
      if (!/^https?:\/\/[^\s/]+\S*$/.test(url)) errors.url = 'An http(s) address, such as https://shop.example.';
      if (!apiKey) errors.apiKey = "The site's API key is needed.";
      if (Object.keys(errors).length) return overview({ values: { url, dryRun: form.dryRun ?? '' }, errors });
      const id = await imports.startLeaderOs({ url, apiKey }, { dryRun: form.dryRun === 'true' });
      return { redirect: `${pages.base}/${id}`, notice: 'Import started.' };
    });

    pages.get('/:id', async ({ params }) => {
      const run = await imports.getRun(idOf(params.id));
      if (!run) throw new DomainError('NOT_FOUND', 'No such import.');
      const blocks: ConsoleBlock[] = [
        { kind: 'links', items: [{ label: 'All imports', href: pages.base }] },
        {
          kind: 'stats',
          items: [
            { label: 'Status', value: `${run.status}${run.dryRun ? ' (dry run)' : ''}` },
            { label: 'Started', value: run.startedAt },
            { label: 'Finished', value: run.finishedAt ?? (run.status === 'running' ? 'still going: reload to follow it' : '') },
          ],
        },
        counts(run),
      ];
      if (run.error)
        blocks.push({ kind: 'text', heading: 'Why it stopped', text: `${run.error} Run it again: what it brought stays, and nothing comes twice.` });
      if (run.report.notBrought.length) blocks.push({ kind: 'text', heading: 'Not brought', text: run.report.notBrought.join('\n') });
      return { title: `Import from ${run.report.source.replace(/^leaderos:/, '')}`, blocks };
    });
  },
};
