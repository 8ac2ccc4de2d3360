/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs` with `what`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Lets overdue timers run after long synchronous work (building large bodies) and before the
 * next request. A test that serves the api in its own process and blocks its event loop
 * longer than the keep-alive timeout would otherwise reuse a pooled connection whose close
 * (the server's overdue keep-alive timer) runs right after: an ECONNRESET that says nothing
 * about the service.
 */
export function runOverdueTimers(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
