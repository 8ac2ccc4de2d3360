// Rewrites the settings table of the docs' settings page from the setting definitions:
//   npm run settings-table
import { readFileSync, writeFileSync } from 'node:fs';
import { settingsTable } from './table.ts';

const page = new URL('../../../docs/operating/settings.md', import.meta.url);
const text = readFileSync(page, 'utf8');
const updated = text.replace(/(<!-- settings:start -->\n)[\s\S]*?(\n<!-- settings:end -->)/, `$1${settingsTable()}$2`);
writeFileSync(page, updated);
