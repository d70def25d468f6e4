/** Every scenario and note of bench/<feature>.ts, narrowed to those whose name contains BENCH_ONLY. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BaselineRoute, BenchNote, Scenario } from './scenario.ts';

const HARNESS = new Set([
  'run.ts',
  'scenario.ts',
  'scenarios.ts',
  'baseline.ts',
  'base-db.ts',
  'load.ts',
  'harness.ts',
  'datasize.ts',
  'rush.ts',
  'rush-load.ts',
  'rush-mix.ts',
  'statements.ts',
]);

async function modules(): Promise<{ scenarios?: Scenario[]; notes?: BenchNote[]; baselineRoutes?: BaselineRoute[] }[]> {
  const dir = import.meta.dirname;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !HARNESS.has(f))
    .sort();
  return Promise.all(files.map((f) => import(pathToFileURL(join(dir, f)).href)));
}

const chosen = (name: string) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY.split(',').some((part) => name.includes(part));

/** The scenarios BENCH_ONLY names, or with `all` every one. */
export async function loadScenarios(all = false): Promise<Scenario[]> {
  return (await modules()).flatMap((m) => m.scenarios ?? []).filter((s) => all || chosen(s.name));
}

export async function loadNotes(): Promise<BenchNote[]> {
  return (await modules()).flatMap((m) => m.notes ?? []).filter((n) => chosen(n.name));
}

/** Baseline routes a module adds beside its scenarios' (the rush's game server ack), whatever BENCH_ONLY says. */
export async function loadBaselineRoutes(): Promise<BaselineRoute[]> {
  return (await modules()).flatMap((m) => m.baselineRoutes ?? []);
}
