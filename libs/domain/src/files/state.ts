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
  deleted_at: number | null;
};

/**
 * The file catalog: a pure fold of the files topic. Deleted files stay as tombstones so a
 * redelivered definition can never bring one back; the indexes cover live files only.
 */
export type FilesState = {
  readonly files: Map<string, FileRecord>;
  /** Every file ever defined, in definition order (index = seq). */
  readonly order: FileRecord[];
  /** User → ids of the live files they own or were granted. */
  readonly visible: Map<string, Set<string>>;
  /** Owner → bytes of their live files (the quota's usage). */
  readonly usage: Map<string, number>;
  /** Owner → how many live files they own (the files-per-user cap's usage). */
  readonly owned: Map<string, number>;
  /** Blob sha256 hex → live files whose bytes it holds. A blob at 0 may be removed. */
  readonly blobRefs: Map<string, number>;
};

export function initialFiles(): FilesState {
  return { files: new Map(), order: [], visible: new Map(), usage: new Map(), owned: new Map(), blobRefs: new Map() };
}

export const blobKeyOf = (sha256Hex: string): string => `blobs/sha256/${sha256Hex}`;

function see(state: FilesState, user: string, fileId: string): void {
  let ids = state.visible.get(user);
  if (!ids) state.visible.set(user, (ids = new Set()));
  ids.add(fileId);
}

function unsee(state: FilesState, user: string, fileId: string): void {
  const ids = state.visible.get(user);
  if (!ids) return;
  ids.delete(fileId);
  if (ids.size === 0) state.visible.delete(user);
}

const live = (state: FilesState, fileId: string): FileRecord | undefined => {
  const file = state.files.get(fileId);
  return file && file.deleted_at === null ? file : undefined;
};

/**
 * Applies one event, in place. Deterministic and free of I/O: replaying the files topic
 * rebuilds the same catalog. Events that do not fit (a second definition of an id, anything
 * about a deleted or unknown file, a grant to the owner) are ignored, on every replay alike.
 */
export function applyFileEvent(state: FilesState, event: FileEvent): FilesState {
  switch (event.type) {
    case 'FileDefined': {
      if (state.files.has(event.file_id)) return state;
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
        seq: state.order.length,
        grants: new Map(),
        deleted_at: null,
      };
      state.files.set(file.file_id, file);
      state.order.push(file);
      see(state, file.owner, file.file_id);
      state.usage.set(file.owner, (state.usage.get(file.owner) ?? 0) + file.size);
      state.owned.set(file.owner, (state.owned.get(file.owner) ?? 0) + 1);
      state.blobRefs.set(sha256, (state.blobRefs.get(sha256) ?? 0) + 1);
      return state;
    }
    case 'FileDescriptionChanged': {
      const file = live(state, event.file_id);
      if (file) {
        file.description = event.description;
        file.updated_at = Math.max(file.updated_at, event.at);
      }
      return state;
    }
    case 'FileAccessGranted': {
      const file = live(state, event.file_id);
      if (file && event.user_name !== file.owner) {
        file.grants.set(event.user_name, event.access);
        file.updated_at = Math.max(file.updated_at, event.at);
        see(state, event.user_name, file.file_id);
      }
      return state;
    }
    case 'FileAccessRevoked': {
      const file = live(state, event.file_id);
      if (file && file.grants.delete(event.user_name)) {
        file.updated_at = Math.max(file.updated_at, event.at);
        unsee(state, event.user_name, file.file_id);
      }
      return state;
    }
    case 'FileDeleted': {
      const file = live(state, event.file_id);
      if (!file) return state;
      file.deleted_at = event.at;
      file.updated_at = Math.max(file.updated_at, event.at);
      unsee(state, file.owner, file.file_id);
      for (const grantee of file.grants.keys()) unsee(state, grantee, file.file_id);
      const used = (state.usage.get(file.owner) ?? 0) - file.size;
      if (used > 0) state.usage.set(file.owner, used);
      else state.usage.delete(file.owner);
      const owned = (state.owned.get(file.owner) ?? 0) - 1;
      if (owned > 0) state.owned.set(file.owner, owned);
      else state.owned.delete(file.owner);
      const refs = (state.blobRefs.get(file.sha256) ?? 0) - 1;
      if (refs > 0) state.blobRefs.set(file.sha256, refs);
      else state.blobRefs.delete(file.sha256);
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

/** A plain, ordered, JSON-serialisable picture of the catalog: equal states give equal snapshots. */
export function snapshotFiles(state: FilesState): unknown {
  return {
    files: state.order.map((f) => ({ ...f, grants: [...f.grants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) })),
    usage: [...state.usage].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    owned: [...state.owned].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    blobRefs: [...state.blobRefs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  };
}
