import { inject, it, type TestFunction } from 'vitest';

/** Whether ClickHouse is the conformance tier's chDB front (one query at a time, answers buffered whole). */
export function onChdbFront(): boolean {
  return inject('stack').CLICKHOUSE_FRONT === 'chdb';
}

/**
 * A test that needs what only a ClickHouse server does (`needs`: KILL QUERY, queries running
 * side by side, system.processes). On the chDB front it is skipped, never passed, and its name
 * says why, so the tier's output shows what it did not prove.
 */
export function itOnServer(needs: string, name: string, fn: TestFunction, timeout?: number): void {
  if (onChdbFront()) it.skip(`${name} [skipped on the chDB front: it cannot serve ${needs}]`, fn);
  else it(name, fn, timeout);
}
