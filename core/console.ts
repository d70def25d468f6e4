/**
 * The staff web console's contract with features. A feature declares its section through the
 * `console` field of its definition: the console feature (plugins/console) lists it in the menu
 * and serves its pages under `/console/<id>`, behind staff sign-in and CSRF checks. Pages are
 * data (blocks) that the console renders with its templates, so a section needs no HTML, no
 * assets and no build step of its own, and every section looks and behaves alike (labels,
 * errors beside their field, focus, phones).
 */
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { DomainError } from './errors.ts';
import type { UploadedFile } from './http/body.ts';
import type { FeatureContext } from './feature-context.ts';
import { createServiceRef } from './registry.ts';

/** `admin`: every section; `support`: the support desk and player lookup (sections that admit it). */
export type ConsoleAccess = 'admin' | 'support';

export interface ConsoleStaff {
  userId: number;
  username: string;
  access: ConsoleAccess;
}

export interface ConsoleRequest {
  params: Record<string, string>;
  /**
   * The form as the route's `body` schema made it (the API's validation: types coerced, unknown
   * fields dropped, empty fields left out); undefined when it failed (see `invalid`) or the route has no schema.
   */
  body?: unknown;
  /** The API's validation error, by the field it names (`_form` for none), when `body` failed its schema. */
  invalid?: Record<string, string>;
  /** Query values; a repeated one keeps its first value. */
  query: Record<string, string>;
  /** A form post's fields as text, as sent (empty for GET); a checkbox is `true` when ticked and absent when not. */
  form: Record<string, string>;
  /** The route's file (`upload` option), when the form sent one with a name; `tooLarge` when it was over the route's limit. */
  upload?: UploadedFile;
  staff: ConsoleStaff;
}

/** A table cell: text, a link, or a button posting to `action` (with the CSRF token added). */
export type ConsoleCell = string | { text: string; href: string } | { action: string; label: string; confirm?: string };

export interface ConsoleField {
  name: string;
  label: string;
  type?: 'text' | 'number' | 'password' | 'textarea' | 'select' | 'checkbox' | 'search' | 'datetime' | 'hidden' | 'file';
  /** For `file`: the types the picker offers (`image/png,image/jpeg`); the route checks the bytes. */
  accept?: string;
  /** For `select`: value and label of each choice. */
  options?: { value: string; label: string }[];
  /** For `select`: an empty first choice with this label, so nothing is chosen until someone picks (with `required`, the form cannot be sent before). */
  placeholder?: string;
  required?: boolean;
  /** Shown under the label, tied to the field for screen readers. */
  hint?: string;
  /** `autocomplete` attribute (`username`, `current-password`, `one-time-code`, `off`). */
  autocomplete?: string;
  /** For `text`/`search`: the `inputmode` a phone keyboard takes (`numeric`, `decimal`). */
  inputmode?: string;
}

export type ConsoleBlock =
  | { kind: 'stats'; heading?: string; items: { label: string; value: string; href?: string }[] }
  | { kind: 'text'; heading?: string; text: string }
  | { kind: 'links'; heading?: string; items: { label: string; href: string }[] }
  | {
      kind: 'table';
      caption: string;
      columns: { key: string; label: string; numeric?: boolean }[];
      rows: Record<string, ConsoleCell>[];
      empty?: string;
      /** Link to the next page (keyset paging) and back to the first. */
      next?: string;
      first?: string;
    }
  | {
      kind: 'form';
      id: string;
      title: string;
      action: string;
      fields: ConsoleField[];
      submit: string;
      /** `get` for search and filter forms (no CSRF token, values land in the URL). */
      method?: 'get' | 'post';
      values?: Record<string, string>;
      /** Errors by field name, shown beside the field; `_form` for one that names no field. */
      errors?: Record<string, string>;
      /** Ask before posting (destructive changes). */
      confirm?: string;
    }
  | { kind: 'thread'; heading: string; messages: { author: string; date: string; text: string; staff: boolean }[] }
  /** What staff must act on: each item a sentence, linked to where to act. */
  | { kind: 'attention'; heading: string; items: { text: string; href?: string }[]; empty: string }
  | ({ kind: 'chart' } & ConsoleChart);

/** Something staff must act on, listed at the top of the dashboard while `count` is above 0. */
export interface ConsoleAttention {
  count: number;
  /** The sentence shown, with its count: "3 deliveries failed for good" (see `counted`). */
  text: string;
  href?: string;
}

/** A bar chart of one figure over days, drawn on the page (SVG) with its figures in a table beside it. */
export interface ConsoleChart {
  heading: string;
  /** One per bar, oldest first: the day (`2026-11-25`). */
  labels: string[];
  /** One per label: cents when `money`, else a count. */
  values: number[];
  money?: boolean;
}

export interface ConsolePage {
  title: string;
  blocks: ConsoleBlock[];
  /** A one-line confirmation shown above the page (after a change). */
  notice?: string;
  /** 422 when a form is shown again with errors. */
  status?: number;
  /** Seconds: the page reloads its content this often while it shows something still going (an import), and stops once a load comes without it. */
  refreshEvery?: number;
}

/** A change that worked: go to `to` (303), showing `notice` there. */
export interface ConsoleRedirect {
  redirect: string;
  notice?: string;
}

/** A file staff download (a report's CSV): sent as an attachment named `filename`. */
export interface ConsoleDownload {
  download: { filename: string; type: string; body: string };
}

export type ConsoleResult = ConsolePage | ConsoleRedirect | ConsoleDownload;
export type ConsoleHandler = (request: ConsoleRequest) => Promise<ConsoleResult>;

export interface ConsoleRouteOptions {
  /** Narrower than the section's access: `admin` on a support section's changes. */
  access?: ConsoleAccess;
  /** A POST's body schema, usually the API route's own: its errors are the API's, beside the field they name. Empty fields count as not sent. */
  body?: TSchema;
  /** A POST taking the form's file field `field` as bytes (the form is sent as multipart), at most `maxBytes` of it. */
  upload?: { field: string; maxBytes: number };
}

/** What a section's `pages` function registers its pages with; paths are under `/console/<id>`. */
export interface ConsolePages {
  /** `/console/<id>`: where links inside the section start. */
  readonly base: string;
  get(path: string, handler: ConsoleHandler, options?: ConsoleRouteOptions): void;
  /** A change: refused unless the form carries the session's CSRF token. */
  post(path: string, handler: ConsoleHandler, options?: ConsoleRouteOptions): void;
  /** Where a page of another section is, when that section runs (asked at request time: sections mount one after another). */
  href(sectionId: string, path?: string): string | undefined;
  /** Figures for the dashboard, shown to the staff who may open this section. */
  dashboard(tiles: () => Promise<{ label: string; value: string; href?: string }[]>): void;
  /** What needs staff now (failed deliveries, open disputes), at the top of the dashboard for those who may open this section. */
  attention(check: () => Promise<ConsoleAttention[]>): void;
  /** Charts for the dashboard, under its attention list. */
  charts(draw: () => Promise<ConsoleChart[]>): void;
}

/**
 * `read` whose calls made while one runs share its answer: the dashboard asks every section's
 * figures, attention list and charts at once, and a section that needs one statement for two of
 * them (and two staff opening the dashboard together) runs it once.
 */
export function sharedFigures<T>(read: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () =>
    (running ??= read().finally(() => {
      running = undefined;
    }));
}

export interface ConsoleSection<Options = unknown, Own = unknown> {
  /** Path segment and menu id: `/console/<id>`. */
  id: string;
  title: string;
  /** Menu position, low first (built-in sections use 10, 20, …). */
  order: number;
  /** Who sees the section; admins see every section. Default `admin`. */
  access?: ConsoleAccess;
  /**
   * Registers the section's pages once every feature is registered, so peers' services can be
   * looked up here. `own` is what the feature's register function returned: its internals, which
   * no other feature sees.
   */
  pages(pages: ConsolePages, ctx: FeatureContext<Options>, own: Own): void | Promise<void>;
}

/** The console feature's side: it mounts each feature's section in a scope of its own. */
export interface ConsoleHost {
  mount(scope: FastifyInstance, feature: string, section: ConsoleSection, ctx: FeatureContext<unknown>, own: unknown): Promise<void>;
}

export const consoleHostRef = createServiceRef<ConsoleHost>('console');

/** A record id from a path or form value: digits only, else 0 (which no record has). */
export function idOf(text: string | undefined, digits = 15): number {
  return new RegExp(`^[0-9]{1,${digits}}$`).test(text ?? '') ? Number(text) : 0;
}

/** A player's cell: their name linked to their page in the players section (when it runs), or `#id` when the name is unknown. */
export function playerCell(pages: ConsolePages, id: number | string, names: ReadonlyMap<number, string>): string | { text: string; href: string } {
  const name = names.get(Number(id));
  if (name === undefined) return `#${id}`;
  const href = pages.href('players', `/${id}`);
  return href ? { text: name, href } : name;
}

/** A form field's text, trimmed; empty when absent. */
export function field(form: Record<string, string>, name: string): string {
  return (form[name] ?? '').trim();
}

/**
 * Where an API error belongs on a form: the field its message starts with (`name: …`,
 * `price must …`, `discountExpiryDate is required`), the field a code is about, or the form.
 */
export function errorsFor(err: unknown, fields: string[], byCode: Record<string, string> = {}): Record<string, string> {
  if (!(err instanceof DomainError)) throw err;
  const named = fields.find((f) => new RegExp(`^${f}(\\b|:)`).test(err.message));
  return { [named ?? byCode[err.code] ?? '_form']: err.message };
}

/** A form shown again: what was sent and its errors by field. */
export interface ShownForm {
  values: Record<string, string>;
  errors: Record<string, string>;
}

/** A list of records a section lets admins add, edit and delete (support categories, roles, …). */
export interface RecordPages<R> {
  /** Under the section's base: '' or '/categories'. */
  path: string;
  /** The list page's title and its table's caption ("Support categories"). */
  title: string;
  /** One record, for headings and buttons ("category", "quick answer"). */
  noun: string;
  fields: ConsoleField[];
  /** The edit form's fields when they differ from the create form's (a record whose amount moves only by its ledger). */
  editFields?: ConsoleField[];
  /** The table's columns after the name (a link to the record's page) and before Delete. */
  columns?: { key: string; label: string; numeric?: boolean }[];
  /** Body schemas of the create and edit posts (the admin API's). */
  createBody: TSchema;
  editBody: TSchema;
  list(): Promise<R[]>;
  /** Throws the feature's NOT_FOUND error. */
  get(id: number): Promise<R>;
  create(request: ConsoleRequest): Promise<R>;
  update(id: number, request: ConsoleRequest): Promise<R>;
  remove(id: number): Promise<void>;
  idOf(record: R): number;
  nameOf(record: R): string;
  /** The form's values for a record. */
  values(record: R): Record<string, string>;
  /** The create form's values before anything is typed (`isActive: 'true'`: a new record starts active). */
  initial?: Record<string, string>;
  /** Cells of `columns` for a record. */
  cells?(record: R): Record<string, ConsoleCell>;
  /** Blocks above the list (links to other pages of the section). */
  above?: ConsoleBlock[];
  /** Error codes that belong to a field. */
  errorFields?: Record<string, string>;
  access?: ConsoleAccess;
}

/** Registers a record list's pages: the list with a create form, each record's edit form, and delete. */
export function recordPages<R>(pages: ConsolePages, spec: RecordPages<R>): void {
  const base = `${pages.base}${spec.path}`;
  const names = spec.fields.map((f) => f.name);
  const options = (body: TSchema): ConsoleRouteOptions => ({ access: spec.access, body });
  const Noun = spec.noun[0]!.toUpperCase() + spec.noun.slice(1);
  const fail = (err: unknown) => errorsFor(err, names, spec.errorFields);

  const listPage = async (add?: ShownForm): Promise<ConsolePage> => ({
    title: spec.title,
    status: add ? 422 : 200,
    blocks: [
      ...(spec.above ?? []),
      {
        kind: 'table',
        caption: spec.title,
        empty: `No ${spec.noun} yet.`,
        columns: [{ key: 'name', label: 'Name' }, ...(spec.columns ?? []), { key: 'delete', label: 'Delete' }],
        rows: (await spec.list()).map((r) => ({
          name: { text: spec.nameOf(r), href: `${base}/${spec.idOf(r)}` },
          ...spec.cells?.(r),
          delete: { action: `${base}/${spec.idOf(r)}/delete`, label: `Delete ${spec.nameOf(r)}`, confirm: `Delete the ${spec.noun} ${spec.nameOf(r)}?` },
        })),
      },
      {
        kind: 'form',
        id: `new-${spec.noun.replace(/ /g, '-')}`,
        title: `New ${spec.noun}`,
        action: base,
        submit: `Create ${spec.noun}`,
        values: add?.values ?? spec.initial,
        errors: add?.errors,
        fields: spec.fields,
      },
    ],
  });

  const editPage = (r: R, edit?: ShownForm): ConsolePage => ({
    title: spec.nameOf(r),
    status: edit ? 422 : 200,
    blocks: [
      { kind: 'links', items: [{ label: spec.title, href: base }] },
      {
        kind: 'form',
        id: `edit-${spec.noun.replace(/ /g, '-')}`,
        title: `Edit ${spec.noun}`,
        action: `${base}/${spec.idOf(r)}`,
        submit: `Save ${spec.noun}`,
        values: edit?.values ?? spec.values(r),
        errors: edit?.errors,
        fields: spec.editFields ?? spec.fields,
      },
    ],
  });

  pages.get(spec.path, async () => listPage(), { access: spec.access });

  pages.post(
    spec.path,
    async (request) => {
      if (request.invalid) return listPage({ values: request.form, errors: request.invalid });
      try {
        const r = await spec.create(request);
        return { redirect: base, notice: `${Noun} ${spec.nameOf(r)} created.` };
      } catch (err) {
        return listPage({ values: request.form, errors: fail(err) });
      }
    },
    options(spec.createBody),
  );

  pages.get(`${spec.path}/:id`, async ({ params }) => editPage(await spec.get(idOf(params.id))), { access: spec.access });

  pages.post(
    `${spec.path}/:id`,
    async (request) => {
      const r = await spec.get(idOf(request.params.id));
      if (request.invalid) return editPage(r, { values: request.form, errors: request.invalid });
      try {
        const saved = await spec.update(spec.idOf(r), request);
        return { redirect: base, notice: `${Noun} ${spec.nameOf(saved)} saved.` };
      } catch (err) {
        return editPage(r, { values: request.form, errors: fail(err) });
      }
    },
    options(spec.editBody),
  );

  pages.post(
    `${spec.path}/:id/delete`,
    async ({ params }) => {
      const r = await spec.get(idOf(params.id));
      await spec.remove(spec.idOf(r));
      return { redirect: base, notice: `${Noun} ${spec.nameOf(r)} deleted.` };
    },
    { access: spec.access },
  );
}
