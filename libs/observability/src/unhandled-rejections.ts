import type { Logger } from 'pino';

let count = 0;
let installed = false;

/**
 * A rejected promise that nothing awaited or caught is logged (with its stack, at error level)
 * and counted, and the process goes on: Node's default would end it, and with it every request
 * in flight, for a failure that left no half-done state behind (the code that rejected has
 * already unwound). Each one is still a bug to fix: tests and /metrics watch the count.
 * An uncaught exception stays fatal, as Node makes it: it may have stopped code midway.
 * Process-wide, as the event it listens to: installed once, by the process's entry point.
 */
export function logUnhandledRejections(logger: Logger): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    count++;
    logger.error({ err: reason }, 'a promise was rejected and nothing handled it; the process goes on');
  });
}

/** The rejections logUnhandledRejections has seen in this process. */
export const unhandledRejections = (): number => count;
