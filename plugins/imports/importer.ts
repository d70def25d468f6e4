/** What every importer shares: its report, and bringing each thing once through its link row. */
import type { ImportReport } from './contract.ts';
import type { Links } from './links.ts';

/** Thrown when the source answers what no such store would: the run stops, what it brought stays. */
export class SourceError extends Error {}

/** Cents of a decimal text or number (`"12.50"`, `12.5`); undefined for anything else. */
export function cents(value: string | number | undefined | null): number | undefined {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? value.toFixed(2) : '') : value;
  if (text === undefined || text === null || !/^\d+(\.\d{1,2})?$/.test(text.trim())) return undefined;
  const [whole, part = ''] = text.trim().split('.');
  return Number(whole) * 100 + Number(part.padEnd(2, '0'));
}

/** Told after each thing a run brings or meets, so its kept report can follow the run. */
export type Progress = (report: ImportReport) => void | Promise<void>;

export abstract class Importer {
  readonly report: ImportReport;
  protected readonly key: string;
  protected readonly links: Links;
  readonly #progress: Progress | undefined;

  constructor(key: string, links: Links, dryRun: boolean, progress?: Progress) {
    this.key = key;
    this.links = links;
    this.#progress = progress;
    this.report = { source: key, dryRun, created: {}, skipped: {}, notBrought: [] };
  }

  abstract run(): Promise<ImportReport>;

  /** Brings one thing once: `make` runs (in the link's transaction) only when no run brought it before. */
  protected async once(kind: string, sourceId: string, make: () => Promise<number>): Promise<number | undefined> {
    const outcome = await this.links.once(this.key, kind, sourceId, make, this.report.dryRun);
    const counts = this.report[outcome.created ? 'created' : 'skipped'];
    counts[kind] = (counts[kind] ?? 0) + 1;
    await this.#progress?.(this.report);
    return outcome.localId;
  }

  protected notBrought(line: string): void {
    this.report.notBrought.push(line);
  }
}
