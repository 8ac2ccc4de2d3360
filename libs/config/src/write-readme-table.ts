// Rewrites the settings table in README.md from the setting definitions:
//   npm run settings-table
import { readFileSync, writeFileSync } from 'node:fs';
import { settingsTable } from './table.ts';

const readme = new URL('../../../README.md', import.meta.url);
const text = readFileSync(readme, 'utf8');
const updated = text.replace(/(<!-- settings:start -->\n)[\s\S]*?(\n<!-- settings:end -->)/, `$1${settingsTable()}$2`);
writeFileSync(readme, updated);
