import type { FileEvent, FilesState, TasksState } from '@meridian/domain';
import type { BlobStore } from '../blob-store.ts';
import type { FileSubmitDeps } from './submit.ts';

/** What the file routes need: the catalog and a way to run a decision against it, storage, tasks. */
export type FilesCommands = {
  readonly state: () => FilesState;
  /** Reads the files log to its end: a file just defined through another process becomes visible. */
  readonly syncToEnd: () => Promise<void>;
  execute(fileId: string, decide: (state: FilesState) => FileEvent[]): Promise<FileEvent[]>;
};

export type FileDeps = {
  readonly storage: BlobStore;
  readonly files: FilesCommands;
  readonly tasks: () => TasksState;
  readonly submit: FileSubmitDeps;
  /** defaultQuotaBytes: for users an admin gave no quota of their own; filesPerUser: MERIDIAN_MAX_FILES_PER_USER (no cap when left out). */
  readonly limits: { readonly uploadBytes: number; readonly defaultQuotaBytes: number; readonly filesPerUser?: number; readonly grantsPerFile?: number };
};
