import { applyFileEvent, filesCodec, initialFiles, type FileEvent, type FileRecord, type FilesState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { FoldContext } from './fold-context.ts';

export type FilesStoreOptions = {
  /** Sees each file a FileDeleted removes from the catalog (the worker looks for blobs no file references any more). */
  readonly onDeleted?: (file: FileRecord) => void;
  /**
   * Present in the one kind of process that writes snapshots of the catalog (the ingest worker):
   * whether it may write one now. A start from a snapshot does not see the deletions before it, so
   * the worker writes one only while no blob of a deleted file waits for removal.
   */
  readonly mayWriteSnapshot?: () => boolean;
};

/**
 * The file catalog for one process: the files topic folded into memory and kept current, started
 * from the newest snapshot plus the tail. Commands (share, describe, delete) decide on this
 * state, append their events keyed by file id (acks=all) and return once this process has
 * applied them.
 */
export class FilesStore extends FoldedTopic<FileEvent, FilesState> {
  constructor(context: FoldContext, role: string, options: FilesStoreOptions = {}) {
    const { onDeleted, mayWriteSnapshot } = options;
    super(context, {
      topic: context.topics.files,
      role: `${role}-files`,
      codec: createEventCodec<FileEvent>(),
      initial: initialFiles,
      apply: (state, event) => {
        const removed = event.type === 'FileDeleted' ? state.files.get(event.file_id) : undefined;
        applyFileEvent(state, event);
        if (removed && onDeleted) onDeleted(removed);
      },
      snapshots: { codec: filesCodec, ...(mayWriteSnapshot ? { mayWrite: mayWriteSnapshot } : {}) },
    });
  }
}
