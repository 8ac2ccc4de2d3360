import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { settingsTable } from './table.ts';

describe('README settings table', () => {
  it('is exactly the table generated from the setting definitions (npm run settings-table rewrites it)', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const between = /<!-- settings:start -->\n([\s\S]*?)\n<!-- settings:end -->/.exec(readme);
    expect(between, 'README.md has the settings markers').not.toBeNull();
    expect(between![1]).toBe(settingsTable());
  });
});
