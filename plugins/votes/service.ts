import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { sql } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { VoteLinkInput, VoteLinkRow, VotesService } from './contract.ts';
import { VotesLink } from './entities.ts';

const PLACEHOLDER = '{username}';

function toRow({ id, name, link }: TableRecord<typeof VotesLink>): VoteLinkRow {
  return { id: String(id), name, link };
}

/** Refuses anything a browser would not open as a web page (`javascript:`, relative paths, …). */
function checkLink(link: string): void {
  let url: URL;
  try {
    url = new URL(link.replaceAll(PLACEHOLDER, 'name'));
  } catch {
    throw new DomainError('VALIDATION_ERROR', 'link must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DomainError('VALIDATION_ERROR', 'link must be an http or https URL');
}

export class DbVotesService implements VotesService {
  readonly #db: Database;

  readonly #audit: AuditLog;

  constructor(db: Database, audit: AuditLog) {
    this.#db = db;
    this.#audit = audit;
  }

  /** A staff change's audit entry, in its transaction. */
  #record(verb: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `votes.link.${verb}`, target: { type: 'vote-link', id }, summary, before, after });
  }

  async linksFor(username?: string): Promise<VoteLinkRow[]> {
    const name = username === undefined ? '' : encodeURIComponent(username);
    return (await this.list()).map((row) => ({ ...row, link: row.link.replaceAll(PLACEHOLDER, name) }));
  }

  async list(): Promise<VoteLinkRow[]> {
    return (await VotesLink.select(this.#db, sql`order by ${VotesLink.c.id}`)).map(toRow);
  }

  async get(id: number): Promise<VoteLinkRow> {
    const link = await VotesLink.find(this.#db, id);
    if (!link) throw new DomainError('VOTE_LINK_NOT_FOUND', `No vote link with ID ${id}.`);
    return toRow(link);
  }

  async create(input: VoteLinkInput): Promise<VoteLinkRow> {
    checkLink(input.link);
    return this.#db.transaction(async () => {
      const made = await this.get(await VotesLink.insert(this.#db, { name: input.name, link: input.link }));
      await this.#record('create', Number(made.id), `Added vote link ${made.name}`, undefined, made);
      return made;
    });
  }

  async update(id: number, patch: Partial<VoteLinkInput>): Promise<VoteLinkRow> {
    return this.#db.transaction(async () => {
      const current = await this.get(id);
      const next = { name: patch.name ?? current.name, link: patch.link ?? current.link };
      checkLink(next.link);
      await VotesLink.update(this.#db, id, { name: patch.name, link: patch.link });
      await this.#record('update', id, `Changed vote link ${next.name}`, current, { id: current.id, ...next });
      return { id: current.id, ...next };
    });
  }

  async delete(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.get(id);
      await this.#db.run(sql`delete from ${VotesLink} where ${VotesLink.c.id} = ${id}`);
      await this.#record('delete', id, `Deleted vote link ${before.name}`, before);
    });
  }
}
