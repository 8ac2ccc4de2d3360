import type { Access } from '../accounts/events.ts';
import { notFound } from '../errors.ts';
import { isLive, orderIndexOf, type FileRecord, type FilesState } from './state.ts';

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
export type FileListPage = { readonly files: ReadonlyArray<{ file: FileListEntry; access: Access }>; readonly next_cursor: number | null };

/**
 * The caller's files, newest definition first: their own and the ones shared with them (an
 * admin sees every live file). `name_contains` matches case-insensitively. The cursor is the
 * definition position of the last file of the previous page, so pages stay stable while
 * files are added.
 */
export function listFiles(state: FilesState, caller: Caller, query: FileListQuery): FileListPage {
  const needle = query.name_contains?.toLowerCase();
  const before = query.cursor ?? Number.POSITIVE_INFINITY;
  const candidates: FileRecord[] = caller.is_admin
    ? state.order
    : [...(state.visible.get(caller.user_name) ?? [])].map((id) => state.files.get(id)!).sort((a, b) => a.seq - b.seq);
  const out: Array<{ file: FileRecord; access: Access }> = [];
  // Admins walk the definition order itself (ascending seq): start just before the cursor.
  const start = (caller.is_admin ? orderIndexOf(candidates, before) : candidates.length) - 1;
  for (let i = start; i >= 0; i--) {
    const file = candidates[i]!;
    if (file.seq >= before || !isLive(state, file)) continue;
    const access = fileAccess(file, caller);
    if (access === null) continue;
    if (needle !== undefined && !file.file_name.toLowerCase().includes(needle)) continue;
    if (out.length === query.limit) return { files: out, next_cursor: out[out.length - 1]!.file.seq };
    out.push({ file, access });
  }
  return { files: out, next_cursor: null };
}

/** Bytes the owner may still store: the quota less their live files' bytes and definitions still on their way. */
export function quotaLeft(usedBytes: number, quotaBytes: number, pendingBytes: number): number {
  return Math.max(0, quotaBytes - usedBytes - pendingBytes);
}
