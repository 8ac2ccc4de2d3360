import { foldFileBatch, type FileReadModel, type FileReadModelWriter, type PositionedFileEvent } from '@meridian/domain';

/**
 * The files projection's one step, shared by the live files projector (apps/ingest) and
 * `meridian replay rebuild files`: the stored rows of the files a batch touches are read back,
 * the batch is folded onto them with the catalog's own fold (foldFileBatch), and the changed
 * rows are written with the offset of their last event, then the partition's position. Nothing
 * is held between batches but the next definition's seq (`seq`), read from the read model when
 * the projection (re)starts.
 */
export type FileProjection = {
  readonly readModel: Pick<FileReadModel, 'rows'>;
  readonly writer: Pick<FileReadModelWriter, 'write'>;
  readonly persist: <T>(what: string, attempt: () => Promise<T>) => Promise<T>;
  readonly seq: { next: number };
};

/** Projects one batch of `partition` ending at `lastOffset` (markers included); returns the rows written. */
export async function projectFileBatch(p: FileProjection, partition: number, events: readonly PositionedFileEvent[], lastOffset: number): Promise<number> {
  const ids = [...new Set(events.map((e) => e.event.file_id))];
  const stored = ids.length === 0 ? [] : await p.persist('reading the files the batch touches', () => p.readModel.rows(ids));
  const { changes, nextSeq } = foldFileBatch(stored, events, p.seq.next);
  await p.persist('writing files to the read model', () => p.writer.write(changes, new Map([[partition, lastOffset]])));
  p.seq.next = nextSeq;
  return changes.length;
}
