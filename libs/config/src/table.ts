import { settingGroups } from './settings.ts';

/** The settings as the Markdown of docs/operating/settings.md: a section and a table per component (a unit test keeps the two equal). */
export function settingsTable(): string {
  return settingGroups
    .map(({ title, about, definitions }) => {
      const rows = Object.entries(definitions).map(([name, def]) => `| \`${name}\` | \`${def.default === '' ? '(empty)' : def.default}\` | ${def.doc} |`);
      return [`## ${title}`, '', about, '', '| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
    })
    .join('\n\n');
}
