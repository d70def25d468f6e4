/**
 * The imports console section: start an import from LeaderOS, Tebex or CraftingStore (through its
 * API, or for the last two an uploaded payments CSV), or a dry run, and follow it while it goes (the
 * run's page reloads its figures until it ends); every run stays listed with its report.
 */
import { idOf, type ConsoleBlock, type ConsoleField, type ConsolePage, type ConsoleRequest, type ConsoleSection } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import type { ImportRun, ImportsService } from './contract.ts';

/** A form shown again: which one, with its values and errors. */
type Shown = { form: string; values: Record<string, string>; errors: Record<string, string> };

/** Seconds between two loads of a running import's page. */
const REFRESH_SECONDS = 2;

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

const DRY_RUN: ConsoleField = { name: 'dryRun', label: 'Dry run: report what it would bring, write nothing', type: 'checkbox' };

/** A hosted store's form: its key, or its payments CSV export instead. */
function hostedForm(id: string, title: string, action: string, key: { name: string; label: string; hint: string }, shown?: Shown): ConsoleBlock {
  const mine = shown?.form === id ? shown : undefined;
  return {
    kind: 'form',
    id,
    title,
    action,
    submit: 'Start import',
    values: mine?.values,
    errors: mine?.errors,
    fields: [
      { ...key, type: 'password', autocomplete: 'off' },
      { name: 'csv', label: 'Or its payments CSV export', type: 'file', hint: 'Instead of the key: the payments only, their packages by name.' },
      DRY_RUN,
    ],
  };
}

export const importsSection: ConsoleSection<{ csvMaxBytes: number }, ImportsService> = {
  id: 'imports',
  title: 'Imports',
  order: 95,
  pages(pages, { options }, imports) {
    const overview = async (shown?: Shown): Promise<ConsolePage> => ({
      title: 'Imports',
      status: shown ? 422 : 200,
      blocks: [
        {
          kind: 'form',
          id: 'new-import',
          title: 'Import from LeaderOS',
          action: pages.base,
          submit: 'Start import',
          values: shown?.form === 'new-import' ? shown.values : undefined,
          errors: shown?.form === 'new-import' ? shown.errors : undefined,
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
            DRY_RUN,
          ],
        },
        hostedForm(
          'tebex-import',
          'Import from Tebex',
          `${pages.base}/tebex`,
          { name: 'secret', label: 'Secret key', hint: 'Tebex → Game servers; it is not kept.' },
          shown,
        ),
        hostedForm(
          'craftingstore-import',
          'Import from CraftingStore',
          `${pages.base}/craftingstore`,
          { name: 'token', label: 'API token', hint: 'CraftingStore → Settings → API; it is not kept.' },
          shown,
        ),
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
      if (Object.keys(errors).length) return overview({ form: 'new-import', values: { url, dryRun: form.dryRun ?? '' }, errors });
      const id = await imports.startLeaderOs({ url, apiKey }, { dryRun: form.dryRun === 'true' });
      return { redirect: `${pages.base}/${id}`, notice: 'Import started.' };
    });

    /** A hosted store's import: its key, or the CSV uploaded in its place. */
    const hosted = (formId: string, keyField: string, start: (source: { key: string } | { csv: string }, dryRun: boolean) => Promise<number>) => {
      return async ({ form, upload }: ConsoleRequest) => {
        const key = (form[keyField] ?? '').trim();
        const dryRun = form.dryRun === 'true';
        const errors: Record<string, string> = {};
        if (upload?.tooLarge) errors.csv = `The file is larger than ${Math.round(options.csvMaxBytes / 1_048_576)} MB: export fewer payments at a time.`;
        else if (upload?.data.length && upload.data.includes(0)) errors.csv = 'A CSV file is text; this one is not.';
        else if (!upload?.data.length && !key) errors[keyField] = 'The key is needed, or a payments CSV export.';
        if (Object.keys(errors).length) return overview({ form: formId, values: { dryRun: form.dryRun ?? '' }, errors });
        const id = await start(upload?.data.length ? { csv: upload.data.toString('utf8') } : { key }, dryRun);
        return { redirect: `${pages.base}/${id}`, notice: 'Import started.' };
      };
    };
    const upload = { field: 'csv', maxBytes: options.csvMaxBytes };
    pages.post(
      '/tebex',
      hosted('tebex-import', 'secret', (s, dryRun) => imports.startTebex('csv' in s ? s : { secret: s.key }, { dryRun })),
      { upload },
    );
    pages.post(
      '/craftingstore',
      hosted('craftingstore-import', 'token', (s, dryRun) => imports.startCraftingStore('csv' in s ? s : { token: s.key }, { dryRun })),
      { upload },
    );

    pages.get('/:id', async ({ params }) => {
      const run = await imports.getRun(idOf(params.id));
      if (!run) throw new DomainError('NOT_FOUND', 'No such import.');
      const running = run.status === 'running';
      const blocks: ConsoleBlock[] = [
        { kind: 'links', items: [{ label: 'All imports', href: pages.base }] },
        {
          kind: 'stats',
          items: [
            { label: 'Status', value: `${run.status}${run.dryRun ? ' (dry run)' : ''}` },
            { label: 'Started', value: run.startedAt },
            { label: 'Finished', value: run.finishedAt ?? (running ? 'still going: this page follows it' : '') },
          ],
        },
        counts(run),
      ];
      if (run.error)
        blocks.push({ kind: 'text', heading: 'Why it stopped', text: `${run.error} Run it again: what it brought stays, and nothing comes twice.` });
      if (run.report.notBrought.length) blocks.push({ kind: 'text', heading: 'Not brought', text: run.report.notBrought.join('\n') });
      return { title: `Import from ${run.report.source.replace(/^leaderos:/, '')}`, blocks, ...(running ? { refreshEvery: REFRESH_SECONDS } : {}) };
    });
  },
};
