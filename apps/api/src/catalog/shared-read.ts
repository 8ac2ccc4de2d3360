/**
 * Reads of the whole catalog asked while one is under way share the next one: a route that
 * reads the whole catalog (the catalog page without a selection, a PromQL selector naming no
 * metric) holds its entries while it works, so N such requests at once held N copies (64
 * producers' downloads by pattern parsed 0.7 GB of catalog when they read it whole). Now at most
 * two reads run or wait at a time whatever the concurrency (and per pattern, sharedReadBy). A caller never gets a read that began before it
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

/**
 * sharedRead per key: the reads of one key (a pattern's match and text) share as above, those of
 * different keys never. A key is held only while reads of it run or wait, so the map stays as
 * small as the requests under way: N downloads of one broad pattern at once hold at most two
 * answers of it, as N reads of the whole catalog do.
 */
export function sharedReadBy<A extends unknown[], T>(read: (...args: A) => Promise<T>, keyOf: (...args: A) => string): (...args: A) => Promise<T> {
  const reads = new Map<string, { readonly read: () => Promise<T>; callers: number }>();
  return (...args) => {
    const key = keyOf(...args);
    let entry = reads.get(key);
    if (entry === undefined) {
      entry = { read: sharedRead(() => read(...args)), callers: 0 };
      reads.set(key, entry);
    }
    const held = entry;
    held.callers++;
    const answer = held.read();
    const done = () => {
      if (--held.callers === 0 && reads.get(key) === held) reads.delete(key);
    };
    answer.then(done, done);
    return answer;
  };
}
