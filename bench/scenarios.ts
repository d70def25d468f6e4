/** Every scenario of bench/<feature>.ts, narrowed to those whose name contains BENCH_ONLY. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Scenario } from './scenario.ts';

const HARNESS = new Set(['run.ts', 'scenario.ts', 'scenarios.ts', 'baseline.ts', 'base-db.ts', 'load.ts']);

export async function loadScenarios(): Promise<Scenario[]> {
  const dir = import.meta.dirname;
  const only = process.env.BENCH_ONLY;
  const scenarios: Scenario[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && !HARNESS.has(f)).sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href) as { scenarios?: Scenario[] };
    scenarios.push(...(mod.scenarios ?? []).filter((s) => !only || s.name.includes(only)));
  }
  return scenarios;
}
