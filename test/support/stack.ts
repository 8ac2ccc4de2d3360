import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const stackScript = fileURLToPath(new URL('../../deploy/local/stack.sh', import.meta.url));

/** Whether this run's services are the local stack, which tests may stop and start. */
export function onLocalStack(): boolean {
  return inject('stack').SOURCE === 'local' || process.env.MERIDIAN_STACK_IS_LOCAL === '1';
}

export function stopService(name: 'kafka' | 'clickhouse' | 'minio'): void {
  execFileSync(stackScript, ['down', name], { stdio: 'inherit' });
}

export function startService(name: 'kafka' | 'clickhouse' | 'minio'): void {
  execFileSync(stackScript, ['up', name], { stdio: 'inherit' });
}
