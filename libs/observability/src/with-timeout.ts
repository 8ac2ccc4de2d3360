/** Rejects when `promise` has not settled within `ms`; the timer never outlives the race. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs `work` with a signal that aborts after `ms` or with `parent`, and rejects then even if
 * `work` does not heed its signal (a step that takes none, hung): the caller moves on, and what
 * `work` still does in the background must be safe to overlap with the next run.
 */
export async function withDeadline<T>(work: (signal: AbortSignal) => Promise<T>, ms: number, what: string, parent?: AbortSignal): Promise<T> {
  const own = new AbortController();
  const timer = setTimeout(() => own.abort(new Error(`${what} took longer than ${ms} ms`)), ms);
  const signal = parent ? AbortSignal.any([own.signal, parent]) : own.signal;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error(`${what} was stopped`));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  const running = work(signal);
  running.catch(() => undefined); // a failure after the deadline has nobody left to tell
  try {
    return await Promise.race([running, aborted]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  }
}
