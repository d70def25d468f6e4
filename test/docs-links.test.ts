/**
 * The guide and the reference point at each other and at the code by relative links; pages move, so
 * every `[text](path)` and `[text](path#anchor)` in README.md, docs/ and bench/ must name a file or
 * folder that exists and, for a markdown page, a heading it has (GitHub's anchors).
 */
import t from 'tap';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { rootDir } from '../core/config.ts';
import { scratchDir } from './helper.ts';

/** The markdown pages checked: README.md and every .md under docs/ and bench/. */
function pages(root: string): string[] {
  const under = (dir: string): string[] =>
    (existsSync(dir) ? readdirSync(dir) : []).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return under(path);
      return name.endsWith('.md') ? [path] : [];
    });
  return [join(root, 'README.md'), ...under(join(root, 'docs')), ...under(join(root, 'bench'))].filter((p) => existsSync(p));
}

/** The text outside fenced code blocks, line by line (a link or heading inside one is code). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a page offers: its headings' (a repeated one gets -1, -2, …) and explicit `<a id|name>`. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      found.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(m[1]!);
  }
  return found;
}

/** Every relative link of the pages that names no file, or no heading of the page it names. */
function brokenLinks(root: string): { checked: number; broken: string[] } {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages(root)) {
    const lines = prose(readFileSync(page, 'utf8'));
    lines.forEach((line, i) => {
      const code = line.replace(/`[^`]*`/g, '');
      for (const m of code.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target)) continue;
        checked++;
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? page : path.startsWith('/') ? join(root, decodeURI(path)) : resolve(dirname(page), decodeURI(path));
        const where = `${relative(root, page)}:${i + 1}: ${target}`;
        if (!existsSync(file)) broken.push(`${where} (no such file)`);
        else if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) {
          broken.push(`${where} (no heading with that anchor in ${relative(root, file)})`);
        }
      }
    });
  }
  return { checked, broken };
}

t.test('every relative link in README.md, docs/ and bench/ resolves to a file and an anchor', async (t) => {
  const { checked, broken } = brokenLinks(rootDir);
  t.ok(checked > 50, `links looked at: ${checked}`);
  t.same(broken, [], broken.join('\n'));
});

t.test('the check finds a missing page, a missing anchor and a link beside code, and passes good ones', async (t) => {
  const root = scratchDir(t);
  mkdirSync(join(root, 'docs', 'reference'), { recursive: true });
  writeFileSync(join(root, 'docs', 'reference', 'events.md'), '# Events\n\n## `credits.changed`\n\n## Same\n\n## Same\n');
  writeFileSync(
    join(root, 'README.md'),
    [
      '# Title',
      '',
      '[ok](docs/reference/events.md#creditschanged) [ok](docs/reference/events.md#same-1) [ok](#title) [web](https://example.org/x)',
      '[gone](docs/gone.md) [no anchor](docs/reference/events.md#nothing) `[code](not/a/link.md)`',
      '```',
      '[fenced](not/a/link.md)',
      '```',
    ].join('\n'),
  );
  const { checked, broken } = brokenLinks(root);
  t.equal(checked, 5);
  t.same(broken, [
    'README.md:4: docs/gone.md (no such file)',
    'README.md:4: docs/reference/events.md#nothing (no heading with that anchor in docs/reference/events.md)',
  ]);
});
