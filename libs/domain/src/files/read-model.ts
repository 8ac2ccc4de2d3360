import type { Access } from '../accounts/events.ts';
import type { Caller, FileListPage, FileListQuery } from './access.ts';
import type { FileEvent } from './events.ts';
import { addLiveFile, applyFileEvent, initialFiles, type FileRecord, type FilesState } from './state.ts';

/**
 * A file as the files read model holds it: its state with the files-topic event it
 * covers. A deleted file keeps its last state with `deleted`: its id stays known, so a second
 * definition of it is ignored on every replay alike (as the in-memory fold keeps its id).
 */
export type FileRow = { readonly file: FileRecord; readonly deleted: boolean; readonly partition: number; readonly offset: number };

/** A row to write, with the users who lost sight of the file in this change (revoked grantees; everyone on a deletion). */
export type FileChange = FileRow & { readonly lostAccess: readonly string[] };

export type PositionedFileEvent = { readonly event: FileEvent; readonly partition: number; readonly offset: number };

/** A user's stored files: the quota's usage and the files-per-user cap's count. */
export type FileUsage = { readonly bytes: number; readonly files: number };

/** The durable file catalog, fed from the files topic by the files projector. */
export interface FileReadModel {
  /** The live file, whoever owns it (the caller checks access); undefined when unknown or deleted. */
  get(fileId: string): Promise<FileRecord | undefined>;
  /** The rows of these ids, deleted ones included: what a batch folds onto, and which definitions are in. */
  rows(fileIds: readonly string[]): Promise<FileRow[]>;
  /** The caller's files, newest definition first (an admin: every live file), as listFiles pages them. */
  list(caller: Caller, query: FileListQuery): Promise<FileListPage>;
  /** Per owner asked for, their live files' bytes and count (absent: none). */
  usage(owners: readonly string[]): Promise<Map<string, FileUsage>>;
  /** Per files partition, the last offset the read model covers. */
  positions(): Promise<Map<number, number>>;
  /** The seq the next definition gets: definitions folded so far, deleted ones included. */
  nextSeq(): Promise<number>;
}

/** The projector's side: the listing and blob references first, then the files, then positions; each write idempotent (a later offset wins). */
export interface FileReadModelWriter {
  write(changes: readonly FileChange[], positions: ReadonlyMap<number, number>): Promise<void>;
}

/** Who sees a file and how: its owner and grantees by name, admins through `*`. */
export const EVERY_FILE = '*';

export function fileViewers(file: FileRecord): Array<[user: string, access: Access]> {
  return [[file.owner, 'rw'], ...file.grants, [EVERY_FILE, 'rw']];
}

/**
 * The catalog made of some stored rows (copies: the fold changes its records in place): what a
 * command decides on (its one file, read once the read model covers the log) and what a batch
 * of the projection folds onto.
 */
export function catalogOf(rows: readonly FileRow[]): FilesState {
  const state = initialFiles();
  for (const row of rows) {
    if (row.deleted) state.deleted.add(row.file.file_id);
    else addLiveFile(state, { ...row.file, grants: new Map(row.file.grants) });
  }
  return state;
}

/**
 * Folds one batch of the files topic onto the stored rows of the files it touches, with the
 * catalog's own fold (applyFileEvent), and returns the rows that changed plus the next seq.
 * An event at or below a row's offset is in that row already (a batch re-read after a crash
 * between rows and position) and is skipped. Pure: the same rows and events give the same changes.
 */
export function foldFileBatch(stored: readonly FileRow[], events: readonly PositionedFileEvent[], nextSeq: number): { changes: FileChange[]; nextSeq: number } {
  const state = catalogOf(stored);
  state.defined = nextSeq;
  const covered = new Map(stored.map((row) => [row.file.file_id, row.offset]));
  // Every grantee a file had in this batch or before it: one who has none now lost it, and gets
  // a row saying so however the log was cut into batches (the rows do not depend on the cuts).
  const granted = new Map(stored.filter((row) => !row.deleted).map((row) => [row.file.file_id, new Set(row.file.grants.keys())]));
  const changed = new Map<string, FileChange>();
  for (const { event, partition, offset } of events) {
    const id = event.file_id;
    if (offset <= (covered.get(id) ?? -1)) continue;
    const before = state.files.get(id);
    applyFileEvent(state, event);
    const after = state.files.get(id);
    if (after) {
      const seen = granted.get(id) ?? new Set<string>();
      for (const user of after.grants.keys()) seen.add(user);
      granted.set(id, seen);
      changed.set(id, { file: after, deleted: false, partition, offset, lostAccess: [] });
    } else if (before) {
      changed.set(id, { file: before, deleted: true, partition, offset, lostAccess: [] });
    }
  }
  const changes = [...changed.values()].map((c) => {
    const seen = [...(granted.get(c.file.file_id) ?? [])];
    const lost = c.deleted
      ? fileViewers(c.file)
          .map(([user]) => user)
          .concat(seen)
      : seen.filter((user) => !c.file.grants.has(user));
    return { ...c, file: { ...c.file, grants: new Map(c.file.grants) }, lostAccess: [...new Set(lost)].sort() };
  });
  return { changes, nextSeq: state.defined };
}
