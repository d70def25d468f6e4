/**
 * Sends the fuzzer's requests and judges the answers: a 2xx or a 4xx of the documented error shape,
 * in time, and no table changed by a request that had to change nothing.
 */
import type { FastifyInstance } from 'fastify';
import { errorStatus } from '../../core/errors.ts';
import type { FuzzCase } from './cases.ts';
import { changedTables, digest, type Digest } from './digest.ts';

/** The statuses of decisions.md §2's refusals. */
const REFUSAL_STATUSES = new Set([400, 401, 403, 404, 405, 409, 413, 415, 429]);
const ERROR_KEYS = ['error', 'message', 'status'];

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

export interface Finding {
  problem: string;
  /** The request, unless the problem belongs to no single one. */
  fuzzCase?: FuzzCase;
  answer?: Answer;
}

/** What is wrong with an answer to a request; nothing when it is right. */
function judge(c: FuzzCase, a: Answer): string[] {
  const problems: string[] = [];
  if (a.status >= 500) problems.push(`server error ${a.status}`);
  else if (a.status >= 400 && !REFUSAL_STATUSES.has(a.status)) problems.push(`refused with HTTP ${a.status}, not a documented status`);
  else if (a.status < 200 || (a.status >= 300 && a.status < 400)) problems.push(`HTTP ${a.status}`);
  if (c.mustReject && a.status < 300) problems.push('served a request the contract refuses');
  if (!a.contentType.startsWith('application/json')) problems.push(`content type "${a.contentType}", not JSON`);
  let body: unknown;
  try {
    body = JSON.parse(a.body);
  } catch {
    return [...problems, 'the body is not JSON'];
  }
  const e = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  if (a.status < 400) {
    if ('error' in e) problems.push('a success body with an "error" key');
    return problems;
  }
  // A route a game plugin calls may carry the nearest code that client knows in `error` and ours
  // in `code` (docs/clients.md): then ours decides the status.
  const keys = Object.keys(e)
    .filter((k) => k !== 'code' || typeof e.code === 'string')
    .sort();
  const ours = (e.code ?? e.error) as string;
  if (
    JSON.stringify(keys.filter((k) => k !== 'code')) !== JSON.stringify(ERROR_KEYS) ||
    e.status !== false ||
    typeof e.message !== 'string' ||
    typeof e.error !== 'string' ||
    !/^[A-Z][A-Z0-9_]*$/.test(e.error) ||
    keys.length !== Object.keys(e).length
  ) {
    problems.push('the error body is not {status:false, error:CODE, message}');
  } else if (errorStatus[ours] !== a.status) {
    problems.push(`error ${ours} is HTTP ${errorStatus[ours] ?? 'unknown'} by its code, answered with ${a.status}`);
  }
  return problems;
}

export class Runner {
  readonly #app: FastifyInstance;
  readonly #timeoutMs: number;
  #baseline?: Digest;
  /** Requests sent and how they were answered, for the summary. */
  readonly counts = { sent: 0, refused: 0, served: 0 };

  constructor(app: FastifyInstance, timeoutMs: number) {
    this.#app = app;
    this.#timeoutMs = timeoutMs;
  }

  /** Forget the last digest: something other than the fuzzer (seeding) changed the tables. */
  rebase(): void {
    this.#baseline = undefined;
  }

  async #send(c: FuzzCase): Promise<Answer | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, this.#timeoutMs, undefined);
    });
    try {
      const res = await Promise.race([this.#app.inject({ method: c.method as 'GET', url: c.url, headers: c.headers, payload: c.payload }), late]);
      return res && { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: res.body };
    } finally {
      clearTimeout(timer);
    }
  }

  async #answer(c: FuzzCase, findings: Finding[]): Promise<Answer | undefined> {
    const answer = await this.#send(c);
    this.counts.sent++;
    if (!answer) {
      findings.push({ fuzzCase: c, problem: `no answer within ${this.#timeoutMs} ms` });
      return undefined;
    }
    this.counts[answer.status >= 400 ? 'refused' : 'served']++;
    for (const problem of judge(c, answer)) findings.push({ fuzzCase: c, answer, problem });
    return answer;
  }

  /** The tables changed since `before`, and the digest to compare the next request with. */
  async #since(before: Digest): Promise<{ now: Digest; changed: string[] }> {
    const now = await digest(this.#app.db);
    return { now, changed: changedTables(before, now) };
  }

  /**
   * Runs one operation's requests: those that must change nothing as one batch between two
   * digests (a changed digest is traced to its requests by sending them again one at a time),
   * then the others one by one, any refused one checked on its own.
   */
  async run(cases: FuzzCase[]): Promise<Finding[]> {
    const findings: Finding[] = [];
    let before = this.#baseline ?? (await digest(this.#app.db));
    const quiet = cases.filter((c) => c.mustNotChange);
    for (const c of quiet) {
      const answer = await this.#answer(c, findings);
      // A write served to a request that had to change nothing may not repeat when sent again
      // (setting a value twice), so it is caught here, not traced later.
      if (answer && answer.status < 400 && c.method !== 'GET') {
        const { now, changed } = await this.#since(before);
        if (changed.length) findings.push({ fuzzCase: c, answer, problem: `had to change nothing, changed ${changed.join(', ')}` });
        before = now;
      }
    }
    const batch = await this.#since(before);
    before = batch.now;
    if (batch.changed.length) {
      findings.push(...(await this.#trace(quiet, batch.changed)));
      before = await digest(this.#app.db);
    }
    for (const c of cases.filter((x) => !x.mustNotChange)) {
      const answer = await this.#answer(c, findings);
      const { now, changed } = await this.#since(before);
      if (answer && answer.status >= 400 && changed.length) {
        findings.push({ fuzzCase: c, answer, problem: `refused, yet changed ${changed.join(', ')}` });
      }
      before = now;
    }
    this.#baseline = before;
    return findings;
  }

  async #trace(batch: FuzzCase[], tables: string[]): Promise<Finding[]> {
    const found: Finding[] = [];
    for (const c of batch) {
      const before = await digest(this.#app.db);
      const answer = await this.#send(c);
      const { changed } = await this.#since(before);
      if (changed.length) found.push({ fuzzCase: c, answer, problem: `had to change nothing, changed ${changed.join(', ')}` });
    }
    if (found.length) return found;
    return [{ problem: `${tables.join(', ')} changed during ${batch.length} requests that had to change nothing; sent again one by one, none did it` }];
  }
}

const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}…(${text.length} chars)` : text);

/** A finding as a line a developer can replay. */
export function describe({ fuzzCase: c, answer, problem }: Finding): string {
  if (!c) return problem;
  const payload = c.payload === undefined ? '' : ` ${clip(Buffer.isBuffer(c.payload) ? c.payload.toString('latin1') : c.payload, 200)}`;
  const type = c.headers['content-type'] ? ` (${c.headers['content-type']})` : '';
  const got = answer ? `${answer.status} ${clip(answer.body, 300)}` : 'no answer';
  return `${problem}: ${c.label}: ${c.method} ${clip(c.url, 200)}${type}${payload} → ${got}`;
}
