import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Settings } from '@meridian/config';
import { settingsEnv } from './settings.ts';

const bin = fileURLToPath(new URL('../../apps/cli/bin/meridian', import.meta.url));

/** Runs the real `meridian` CLI (its bin script, as a user types it) with the test's settings. */
export function meridian(settings: Settings, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...settingsEnv(settings) } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The bin script's path, for a test that spawns the user CLI itself (signals, a TTY). */
export const meridianBin = bin;

export type CliRun = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** Runs the user CLI with exactly `env` (no TTY), in `cwd` when given. */
export function userCli(args: string[], env: Record<string, string>, cwd?: string): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(bin, args, { env, cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const e = error as { code?: number | string; signal?: NodeJS.Signals } | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr });
    });
  });
}
