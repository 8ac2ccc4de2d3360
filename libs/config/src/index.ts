export { loadSettings, loadSettingsOrExit, ConfigError, type Settings } from './load.ts';
export { settingDefinitions, type SettingName } from './settings.ts';
export { settingsTable } from './table.ts';
export { adapterOptions, type AdapterOptions } from './adapter-options.ts';
export { rollupMinRangeMs } from './settings/prometheus.ts';
