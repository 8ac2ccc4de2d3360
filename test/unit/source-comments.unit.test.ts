import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Comments say why the code is as it is; which issue asked for it is in the commits and the changelog. */
describe('source comments', () => {
  // Upstream references ("kafkajs issues #1416") say where a workaround comes from, and stay.
  it('name no issue of ours: no "issue N" in apps/, libs/ or test/', () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'apps', 'libs', 'test'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|js|py|sh)$/.test(f));
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const file of files) {
      readFileSync(`${root}/${file}`, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/\bissues? \d+\b/i.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});
