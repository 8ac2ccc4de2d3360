/**
 * Where the snapshots of one folded topic are kept (libs/storage: objects in the service's
 * bucket). A snapshot is named by its position, the sum of the next offsets it covers: the log
 * only grows, so a larger position is a later snapshot. Snapshots are a cache of the log: losing
 * them all costs a start from offset 0, nothing else.
 */
export type SnapshotStore = {
  /**
   * Stores a snapshot document at its position. Writers may race: every document is a whole,
   * consistent fold, so whichever lands at a position is a valid one to start from.
   */
  put(position: number, document: string): Promise<void>;
  /** Positions held, newest first. */
  positions(): Promise<number[]>;
  /** The document at a position; throws if it is gone or cannot be read. */
  read(position: number): Promise<string>;
  /** Removes all but the newest `keep`. */
  prune(keep: number): Promise<void>;
};
