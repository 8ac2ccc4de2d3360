import { settingDefinitions } from './settings.ts';

/** The settings as the Markdown table of docs/operating/settings.md (a unit test keeps the two equal). */
export function settingsTable(): string {
  const rows = Object.entries(settingDefinitions).map(
    ([name, def]) => `| \`${name}\` | \`${def.default === '' ? '(empty)' : def.default}\` | ${def.doc} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
