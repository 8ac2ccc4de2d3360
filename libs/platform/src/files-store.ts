import type { Producer } from 'kafkajs';
import { applyFileEvent, initialFiles, type FileEvent, type FilesState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/**
 * The file catalog for one process: the files topic folded into memory and kept current.
 * Commands (share, describe, delete) decide on this state, append their events keyed by
 * file id (acks=all) and return once this process has applied them. `onApplied` sees every
 * event after it is folded (the worker uses it to find blobs no file references any more).
 */
export class FilesStore extends FoldedTopic<FileEvent, FilesState> {
  private readonly codec;
  private readonly filesTopic: string;

  constructor(platform: Platform, role: string, onApplied?: (event: FileEvent, state: FilesState) => void) {
    const codec = createEventCodec<FileEvent>();
    super(platform, {
      topic: platform.topics.files,
      role: `${role}-files`,
      codec,
      initial: initialFiles,
      apply: (state, event) => {
        applyFileEvent(state, event);
        onApplied?.(event, state);
      },
    });
    this.codec = codec;
    this.filesTopic = platform.topics.files;
  }

  async execute(fileId: string, decide: (state: FilesState) => FileEvent[], producer: Producer): Promise<FileEvent[]> {
    const events = decide(this.state);
    await this.waitFor(await appendEvents(producer, this.codec, this.filesTopic, fileId, events));
    return events;
  }
}
