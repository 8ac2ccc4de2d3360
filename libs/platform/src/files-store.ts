import { applyFileEvent, initialFiles, type FileEvent, type FilesState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/**
 * The file catalog for one process: the files topic folded into memory and kept current.
 * Commands (share, describe, delete) decide on this state, append their events keyed by
 * file id (acks=all) and return once this process has applied them. `onApplied` sees every
 * event after it is folded (the worker uses it to find blobs no file references any more).
 */
export class FilesStore extends FoldedTopic<FileEvent, FilesState> {
  constructor(platform: Platform, role: string, onApplied?: (event: FileEvent, state: FilesState) => void) {
    super(platform, {
      topic: platform.topics.files,
      role: `${role}-files`,
      codec: createEventCodec<FileEvent>(),
      initial: initialFiles,
      apply: (state, event) => {
        applyFileEvent(state, event);
        onApplied?.(event, state);
      },
    });
  }
}
