/**
 * Reads of the whole catalog asked while one is under way share the next one: a route that
 * reads the whole catalog (the catalog page without a selection, a PromQL selector naming no
 * metric) holds its entries while it works, so N such requests at once held N copies (64
 * producers' downloads by pattern parsed 0.7 GB of catalog when they read it whole). Now at most
 * two reads run or wait at a time whatever the concurrency. A caller never gets a read that began before it
 * asked: one that joins a read under way could miss a metric whose task succeeded just before
 * it asked (a succeeded upload is downloadable), so callers arriving during a read wait for the
 * one after it, which every one of them shares.
 */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  let next: Promise<T> | null = null;
  const start = (): Promise<T> => {
    const current = read();
    running = current;
    const done = () => {
      if (running === current) running = null;
    };
    current.then(done, done);
    return current;
  };
  return () => {
    if (running === null) return start();
    next ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        next = null;
        return start();
      });
    return next;
  };
}
