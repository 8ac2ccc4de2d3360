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
