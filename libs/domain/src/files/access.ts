import type { Access } from '../accounts/events.ts';
import { notFound } from '../errors.ts';
import type { FileRecord, FilesState } from './state.ts';

/** Who is asking: any user record has these. */
export type Caller = { readonly user_name: string; readonly is_admin: boolean };

/** The caller's access to a live file (the catalog holds no other): owner and admins rw; otherwise the grant, if any. */
export function fileAccess(file: FileRecord | undefined, caller: Caller): Access | null {
  if (!file) return null;
  if (caller.is_admin || file.owner === caller.user_name) return 'rw';
  return file.grants.get(caller.user_name) ?? null;
}

export const NO_SUCH_FILE = 'no such file';

/**
 * The file, if the caller may see it. Unknown, deleted, someone else's and malformed ids all
 * fail with the same 404, so an id reveals nothing.
 */
export function visibleFile(state: FilesState, fileId: string, caller: Caller): { file: FileRecord; access: Access } {
  const file = state.files.get(fileId);
  const access = fileAccess(file, caller);
  if (!file || access === null) throw notFound(NO_SUCH_FILE);
  return { file, access };
}

export type FileListQuery = { readonly name_contains?: string | undefined; readonly limit: number; readonly cursor?: number | undefined };
/** What a list shows of a file. */
export type FileListEntry = Pick<FileRecord, 'file_id' | 'owner' | 'file_name' | 'description' | 'created_at' | 'seq'>;
/** A page of the caller's files, newest definition first (the files read model's list). */
export type FileListPage = { readonly files: ReadonlyArray<{ file: FileListEntry; access: Access }>; readonly next_cursor: number | null };

/** Bytes the owner may still store: the quota less their live files' bytes and definitions still on their way. */
export function quotaLeft(usedBytes: number, quotaBytes: number, pendingBytes: number): number {
  return Math.max(0, quotaBytes - usedBytes - pendingBytes);
}
