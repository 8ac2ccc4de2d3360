import type { TasksState } from '@meridian/domain';
import type { BlobStore } from '../blob-store.ts';
import type { FileCatalog } from './catalog.ts';
import type { CommandLog } from '../tasks/submit-command.ts';

/** What the file routes need: the catalog (the files read model, its bounded waits, the file commands), storage, tasks. */
export type FileDeps = {
  readonly storage: BlobStore;
  readonly files: FileCatalog;
  readonly tasks: () => TasksState;
  readonly submit: CommandLog;
  /** defaultQuotaBytes: for users an admin gave no quota of their own; filesPerUser: MERIDIAN_MAX_FILES_PER_USER (no cap when left out). */
  readonly limits: { readonly uploadBytes: number; readonly defaultQuotaBytes: number; readonly filesPerUser?: number; readonly grantsPerFile?: number };
};
