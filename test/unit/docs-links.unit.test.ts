import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link of README.md and docs/**\/*.md leads to a file of the repository, and every
 * #anchor to a heading of the page it names, with the ids VitePress gives headings. The docs
 * build (`make docs`) refuses links to missing pages but not missing anchors, and it never sees
 * README.md; this test runs in the unit tier, so `make test` checks both on every change.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

// VitePress's heading ids (its slugify, given to markdown-it-anchor), rule for rule.
// eslint-disable-next-line no-control-regex -- VitePress's own rule drops control characters
const rControl = /[\u0000-\u001f]/g;
const rSpecial = /[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g;
const rCombining = /[\u0300-\u036F]/g;
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(rCombining, '')
    .replace(rControl, '')
    .replace(rSpecial, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

/** A heading's text as markdown-it-anchor reads it: its text and code spans, without the markup. */
function headingText(markdown: string): string {
  return markdown
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(\*|_)(.+?)\1/g, '$2')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .trim();
}

/** The lines of a page outside fenced code blocks, with inline code spans blanked out. */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(```+|~~~+)/.exec(line);
    if (marker) {
      if (fence === null) fence = marker[1]!.slice(0, 3);
      else if (marker[1]!.startsWith(fence)) fence = null;
      return;
    }
    if (fence === null) out.push({ line: i + 1, text: line });
  });
  return out;
}

/** The ids of a page's headings, as VitePress makes them: custom `{#id}`, else the slug, -1, -2 for repeats. */
export function headingIds(text: string): Set<string> {
  const ids = new Set<string>();
  for (const { text: line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const custom = /\s*\{#([^}\s]+)\}\s*$/.exec(heading[1]!);
    if (custom) {
      ids.add(custom[1]!);
      continue;
    }
    const slug = slugify(headingText(heading[1]!));
    let id = slug;
    for (let n = 1; ids.has(id); n++) id = `${slug}-${n}`;
    ids.add(id);
  }
  return ids;
}

/** The inline links and images of a page's prose (not in code), with their line numbers. */
export function links(text: string): Array<{ line: number; target: string }> {
  const out: Array<{ line: number; target: string }> = [];
  for (const { line, text: prose } of proseLines(text)) {
    const withoutCode = prose.replace(/`[^`]*`/g, '');
    for (const match of withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line, target: match[1]! });
    }
  }
  return out;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name.startsWith('.') || entry.name === 'node_modules' ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** What is wrong with each relative link of the given pages: a missing file, or an anchor no heading has. */
export function brokenLinks(files: readonly string[]): string[] {
  const idsOf = new Map<string, Set<string>>();
  const ids = (file: string): Set<string> => {
    if (!idsOf.has(file)) idsOf.set(file, headingIds(readFileSync(file, 'utf8')));
    return idsOf.get(file)!;
  };
  const problems: string[] = [];
  for (const file of files) {
    const where = relative(root, file);
    for (const { line, target } of links(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like: not ours to check
      const hash = target.indexOf('#');
      const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? '' : decodeURIComponent(target.slice(hash + 1));
      if (path.startsWith('/')) {
        problems.push(`${where}:${line}: ${target}: link relative to the page, not to a root`);
        continue;
      }
      const resolved = path === '' ? file : resolve(dirname(file), path);
      if (!existsSync(resolved)) {
        problems.push(`${where}:${line}: ${target}: no such file`);
        continue;
      }
      if (statSync(resolved).isDirectory()) {
        if (anchor) problems.push(`${where}:${line}: ${target}: an anchor into a directory`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !ids(resolved).has(anchor)) {
        problems.push(`${where}:${line}: ${target}: no heading with the id "${anchor}" in ${relative(root, resolved)}`);
      }
    }
  }
  return problems;
}

describe('links of the README and the docs', () => {
  it("use VitePress's heading ids", () => {
    expect(slugify('Limits: what one request, one user or one input may cost')).toBe('limits-what-one-request-one-user-or-one-input-may-cost');
    expect(slugify('The `meridian` CLI')).toBe('the-meridian-cli');
    expect(slugify('2026-11-24')).toBe('_2026-11-24');
    expect(slugify('Exactly-once with replicas')).toBe('exactly-once-with-replicas');
    expect([...headingIds('# A\n## The `x` part\n## The x part\n```\n## not a heading\n```\n### Custom {#mine}\n')]).toEqual([
      'a',
      'the-x-part',
      'the-x-part-1',
      'mine',
    ]);
  });

  it('find a link to a missing page and one to a missing anchor', () => {
    expect(links('see [a](./a.md#b) and `[not](./code.md)`\n```\n[no](./fenced.md)\n```\n![img](./i.png "t")')).toEqual([
      { line: 1, target: './a.md#b' },
      { line: 5, target: './i.png' },
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'docs-links-'));
    try {
      writeFileSync(join(dir, 'a.md'), '# A\n\n## Per user\n');
      writeFileSync(
        join(dir, 'b.md'),
        '[ok](./a.md#per-user) [self](#b) [gone](./missing.md) [wrong](./a.md#per-users) [web](https://example.com/x.md)\n\n# B\n',
      );
      const problems = brokenLinks([join(dir, 'b.md')]);
      expect(problems).toHaveLength(2);
      expect(problems[0]).toMatch(/\.\/missing\.md: no such file/);
      expect(problems[1]).toMatch(/\.\/a\.md#per-users: no heading with the id "per-users"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('all resolve: every relative link to a file, every #anchor to a heading', () => {
    const files = [join(root, 'README.md'), ...markdownFiles(join(root, 'docs'))];
    expect(files.length).toBeGreaterThan(10);
    expect(brokenLinks(files)).toEqual([]);
  });
});
