import type { FileEvent, FileReadModel, FileReadModelWriter } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { eventsAfter, projectFileBatch } from '@meridian/projection';
import type { IngestDeps } from '../ingest-deps.ts';
import type { ReadModelOptions } from './options.ts';
import { startReadModelProjector, type RunningReadModelProjector } from './projector.ts';

/**
 * Projects the files topic into the files read model, exactly once (the machinery:
 * ./projector.ts). Each batch is folded onto the stored rows of the files it touches
 * (projectFileBatch); between batches only the next definition's seq is held, read back with the
 * positions after every (re)join.
 */
export async function startFilesProjector(
  ingest: IngestDeps,
  options: ReadModelOptions,
  readModel: FileReadModel,
  writer: FileReadModelWriter,
): Promise<RunningReadModelProjector> {
  const codec = createEventCodec<FileEvent>();
  const seq = { next: 0 };
  return startReadModelProjector(ingest, options, {
    name: 'files',
    groupId: ingest.groups.filesProjector,
    topic: ingest.topics.files,
    reset: () => {
      seq.next = 0;
    },
    async load(_partitions, persist) {
      const [stored, next] = await persist('reading the files read model', async () => [await readModel.positions(), await readModel.nextSeq()] as const);
      seq.next = next;
      return stored;
    },
    async project(partition, messages, after, last, persist) {
      await projectFileBatch({ readModel, writer, persist, seq }, partition, eventsAfter(codec, partition, messages, after), last);
    },
    writePositions: (positions) => writer.write([], positions),
  });
}
