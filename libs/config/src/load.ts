import type { z } from 'zod';
import { settingDefinitions, settingRules, type SettingName } from './settings.ts';

type Defs = typeof settingDefinitions;
export type Settings = { readonly [K in SettingName]: z.output<Defs[K]['schema']> };

/** Thrown at start when the environment holds an invalid setting; lists every problem at once. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * An entry point's settings from its environment, or, when one is invalid, the problems on
 * stderr (each naming its variable) and exit status 2: a process never starts half-configured.
 */
export function loadSettingsOrExit(env: Readonly<Record<string, string | undefined>>, processName: string): Settings {
  try {
    return loadSettings(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${processName}: ${error.message}\n`);
    process.exit(2);
  }
}

/**
 * Compiles the settings once: fills defaults, validates every variable and returns a
 * complete, frozen object. Only apps' entry points call this with process.env.
 */
export function loadSettings(env: Readonly<Record<string, string | undefined>>): Settings {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, def] of Object.entries(settingDefinitions)) {
    const raw = env[name];
    const input = raw === undefined || raw === '' ? def.default : raw;
    const parsed = def.schema.safeParse(input);
    if (parsed.success) values[name] = parsed.data;
    else {
      const shown = isSecret(name) ? '<hidden>' : JSON.stringify(input);
      problems.push(`${name}=${shown}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const related = settingRules.safeParse(values);
  if (!related.success) throw new ConfigError(related.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return Object.freeze(values) as Settings;
}

function isSecret(name: string): boolean {
  return /PASSWORD|SECRET/.test(name);
}
