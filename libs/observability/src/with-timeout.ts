/** Rejects when `promise` has not settled within `ms`; the timer never outlives the race. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs `work` with a signal that aborts after `ms` or with `parent`, and rejects at `ms` even if
 * `work` does not heed its signal (a step that takes none, hung): the caller moves on, and what
 * `work` still does in the background must be safe to overlap with the next run. A `parent`
 * abort (a stop) is only passed on: `work` ends as it heeds it, and the caller waits for that, so
 * a stop does not leave work running under clients being closed.
 */
export async function withDeadline<T>(work: (signal: AbortSignal) => Promise<T>, ms: number, what: string, parent?: AbortSignal): Promise<T> {
  const own = new AbortController();
  const timer = setTimeout(() => own.abort(new Error(`${what} took longer than ${ms} ms`)), ms);
  const signal = parent ? AbortSignal.any([own.signal, parent]) : own.signal;
  let onLate: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    onLate = () => reject(own.signal.reason as Error);
    own.signal.addEventListener('abort', onLate, { once: true });
  });
  const running = work(signal);
  running.catch(() => undefined); // a failure after the deadline has nobody left to tell
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
    own.signal.removeEventListener('abort', onLate!);
  }
}
