import type { Logger } from '@meridian/observability';

/**
 * Runs `attempt` until it succeeds, backing off up to 5 s and logging each failure. For
 * start-up work a process must not die of (a dependency still starting, topics another
 * process is creating at the same moment).
 */
export async function untilDone(what: string, attempt: () => Promise<void>, logger: Logger): Promise<void> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const delay = Math.min(250 * 2 ** n, 5000);
      // A passing outage is a warning; one that lasts (a wrong endpoint or credentials) an error.
      logger[n < 10 ? 'warn' : 'error']({ err: error, attempt: n + 1, retry_in_ms: delay }, `${what} failed; retrying`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
