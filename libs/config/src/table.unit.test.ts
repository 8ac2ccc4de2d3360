import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { settingsTable } from './table.ts';

describe('the settings table of the docs (docs/operating/settings.md)', () => {
  it('is exactly the table generated from the setting definitions (npm run settings-table rewrites it)', () => {
    const page = readFileSync(new URL('../../../docs/operating/settings.md', import.meta.url), 'utf8');
    const between = /<!-- settings:start -->\n([\s\S]*?)\n<!-- settings:end -->/.exec(page);
    expect(between, 'docs/operating/settings.md has the settings markers').not.toBeNull();
    expect(between![1]).toBe(settingsTable());
  });
});
