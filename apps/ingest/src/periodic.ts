/**
 * Runs `pass` every `intervalMs` (the next one counted from the end of the last), until stopped;
 * stop waits for a pass under way. `pass` handles its own failures: a throw is a bug.
 */
export function startPeriodic(pass: () => Promise<void>, intervalMs: number): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(next);
    }, intervalMs);
    timer.unref();
  };
  next();
  return {
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
    },
  };
}
