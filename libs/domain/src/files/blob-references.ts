/**
 * What the ingest worker's blob collector asks of the files read model: which blobs
 * live files still reference, and which blobs deletions released, by log position. The
 * collector keeps no file in memory: a start reads nothing but a sweep position.
 */
export interface BlobReferences {
  /** Per files partition, the last offset the read model covers. */
  positions(): Promise<Map<number, number>>;
  /** Of these blobs (SHA-256, hex), the ones at least one live file references. */
  referenced(sha256s: readonly string[]): Promise<Set<string>>;
  /**
   * Deletions of `partition` after offset `after` up to `upTo`, oldest first, at most `limit`:
   * each one's offset and the blob it released.
   */
  released(partition: number, after: number, upTo: number, limit: number): Promise<Array<{ readonly sha256: string; readonly offset: number }>>;
  /** Per files partition, the offset up to which every released blob has been handled (absent: none yet). */
  swept(): Promise<Map<number, number>>;
  /** Records how far deletions have been handled; a lower offset than one recorded changes nothing. */
  recordSwept(positions: ReadonlyMap<number, number>): Promise<void>;
}
