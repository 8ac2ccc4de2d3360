import type { Access } from '../accounts/events.ts';
import type { FileEvent } from './events.ts';

export type FileRecord = {
  readonly file_id: string;
  readonly task_id: string;
  /** The owning user. */
  readonly owner: string;
  readonly file_name: string;
  description: string;
  readonly content_type: string;
  readonly size: number;
  /** Hex SHA-256 of the bytes: the blob's name and the download's ETag. */
  readonly sha256: string;
  readonly blob_key: string;
  readonly created_at: number;
  updated_at: number;
  /** Position in definition order (0, 1, ...): the stable order lists and cursors use. */
  readonly seq: number;
  /** Other users' access, one entry per grantee. */
  readonly grants: Map<string, Access>;
};

/**
 * The file catalog: a pure fold of the files topic, holding live files only, so its size
 * follows what is live rather than the log's length. Of a deleted file only its id stays
 * (`deleted`), because two things still ask about it: a second FileDefined of the id must
 * not bring the file back (the fold ignores a second definition on every replay alike, so
 * it must know the first), and the quota's pending count (apps/api/src/files/quota.ts) tells
 * a finished definition from one not folded yet by whether the catalog knows its id. An id
 * costs tens of bytes, a record with its names, grants and description far more.
 */
export type FilesState = {
  /** Live files by id. */
  readonly files: Map<string, FileRecord>;
  /**
   * Live files in definition order (ascending seq), and some deleted ones not yet swept out: a
   * deletion leaves its record here until deleted records outnumber live ones, then one pass
   * removes them all (a removal per deletion would move half the array each time). A record
   * here is live while `files` maps its id to it.
   */
  readonly order: FileRecord[];
  /** Ids of deleted files. */
  readonly deleted: Set<string>;
  /** Files ever defined: the next definition's seq. */
  defined: number;
};

export function initialFiles(): FilesState {
  return { files: new Map(), order: [], deleted: new Set(), defined: 0 };
}

/** Whether a FileDefined of this id was folded, whether the file still lives or was deleted. */
export function fileEverDefined(state: FilesState, fileId: string): boolean {
  return state.files.has(fileId) || state.deleted.has(fileId);
}

export const blobKeyOf = (sha256Hex: string): string => `blobs/sha256/${sha256Hex}`;

/** Whether a record of `order` is a live file (deleted ones stay there until the next sweep). */
export const isLive = (state: FilesState, file: FileRecord): boolean => state.files.get(file.file_id) === file;

/** Deleted records `order` may hold beyond as many as live ones before a sweep: small catalogs are never swept. */
const SWEEP_SLACK = 1024;

/** Removes the deleted records from `order`, in one pass that keeps its order. */
function sweepOrder(state: FilesState): void {
  let kept = 0;
  for (const file of state.order) if (isLive(state, file)) state.order[kept++] = file;
  state.order.length = kept;
}

/** Adds a live file to the catalog (a definition, or a stored row being read back). */
export function addLiveFile(state: FilesState, file: FileRecord): void {
  state.files.set(file.file_id, file);
  state.order.push(file);
}

/**
 * Applies one event, in place. Deterministic and free of I/O: replaying the files topic
 * rebuilds the same catalog. Events that do not fit (a second definition of an id, anything
 * about a deleted or unknown file, a grant to the owner) are ignored, on every replay alike.
 */
export function applyFileEvent(state: FilesState, event: FileEvent): FilesState {
  switch (event.type) {
    case 'FileDefined': {
      if (fileEverDefined(state, event.file_id)) return state;
      const sha256 = event.sha256.toString('hex');
      const file: FileRecord = {
        file_id: event.file_id,
        task_id: event.task_id,
        owner: event.user_name,
        file_name: event.file_name,
        description: event.description,
        content_type: event.content_type,
        size: event.size,
        sha256,
        blob_key: event.blob_key,
        created_at: event.at,
        updated_at: event.at,
        seq: state.defined++,
        grants: new Map(),
      };
      addLiveFile(state, file);
      return state;
    }
    case 'FileDescriptionChanged': {
      const file = state.files.get(event.file_id);
      if (file) {
        file.description = event.description;
        file.updated_at = Math.max(file.updated_at, event.at);
      }
      return state;
    }
    case 'FileAccessGranted': {
      const file = state.files.get(event.file_id);
      if (file && event.user_name !== file.owner) {
        file.grants.set(event.user_name, event.access);
        file.updated_at = Math.max(file.updated_at, event.at);
      }
      return state;
    }
    case 'FileAccessRevoked': {
      const file = state.files.get(event.file_id);
      if (file && file.grants.delete(event.user_name)) {
        file.updated_at = Math.max(file.updated_at, event.at);
      }
      return state;
    }
    case 'FileDeleted': {
      const file = state.files.get(event.file_id);
      if (!file) return state;
      state.files.delete(file.file_id);
      state.deleted.add(file.file_id);
      if (state.order.length > 2 * state.files.size + SWEEP_SLACK) sweepOrder(state);
      return state;
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}

export function foldFiles(events: Iterable<FileEvent>): FilesState {
  const state = initialFiles();
  for (const e of events) applyFileEvent(state, e);
  return state;
}
