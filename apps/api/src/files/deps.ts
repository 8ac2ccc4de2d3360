import type { FileEvent, TasksState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import type { ApiParts } from '../api-parts.ts';
import type { BlobStore } from '../blob-store.ts';
import type { CommandLog } from '../tasks/submit-command.ts';
import { FileCatalog } from './catalog.ts';

/** What the file routes need: the catalog (the files read model, its bounded waits, the file commands), storage, tasks. */
export type FileDeps = {
  readonly storage: BlobStore;
  readonly files: FileCatalog;
  readonly tasks: () => TasksState;
  readonly submit: CommandLog;
  /** defaultQuotaBytes: for users an admin gave no quota of their own; filesPerUser: MERIDIAN_MAX_FILES_PER_USER (no cap when left out). */
  readonly limits: { readonly uploadBytes: number; readonly defaultQuotaBytes: number; readonly filesPerUser?: number; readonly grantsPerFile?: number };
};

/** The file catalog over the files read model and the files log (the api holds no file in memory). */
export function createFileCatalog({ services, settings }: ApiParts): FileCatalog {
  const fileCodec = createEventCodec<FileEvent>();
  return new FileCatalog({
    readModel: services.fileReadModel,
    logEnds: () => services.log.endOffsets(services.topics.files),
    append: async (fileId, events) => appendEvents(await services.log.writer(), fileCodec, services.topics.files, fileId, events),
    ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    waitMs: settings.MERIDIAN_FILES_READ_MODEL_WAIT_MS,
    logger: services.logger.child({ component: 'files' }),
  });
}

export function fileDeps({ services, settings, tasks, submit }: ApiParts, files: FileCatalog): FileDeps {
  return {
    storage: services.blobs,
    files,
    tasks: () => tasks.state,
    submit,
    limits: {
      uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES,
      defaultQuotaBytes: settings.MERIDIAN_FILE_QUOTA_BYTES,
      filesPerUser: settings.MERIDIAN_MAX_FILES_PER_USER,
      grantsPerFile: settings.MERIDIAN_MAX_GRANTS_PER_FILE,
    },
  };
}
