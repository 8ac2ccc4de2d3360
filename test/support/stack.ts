import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

const stackScript = fileURLToPath(new URL('../../deploy/local/stack.sh', import.meta.url));

/** Whether this run's services are the local stack, which tests may stop and start. */
export function onLocalStack(): boolean {
  return inject('stack').SOURCE === 'local' || process.env.MERIDIAN_STACK_IS_LOCAL === '1';
}

/**
 * Asynchronous, never execFileSync: starting Kafka takes seconds, and a blocked event loop
 * (an api served in the test's own process, the test's pooled keep-alive connections) would
 * let the server's overdue keep-alive timer close a connection the client has just reused
 * for its next request: an ECONNRESET that says nothing about the service.
 */
async function stack(...args: string[]): Promise<void> {
  const { stdout, stderr } = await promisify(execFile)(stackScript, args);
  process.stdout.write(stdout);
  process.stderr.write(stderr);
}

export function stopService(name: 'kafka' | 'clickhouse' | 'minio'): Promise<void> {
  return stack('down', name);
}

export function startService(name: 'kafka' | 'clickhouse' | 'minio'): Promise<void> {
  return stack('up', name);
}
