import {
  fileAccess,
  isLive,
  type Access,
  type Caller,
  type FileListPage,
  type FileListQuery,
  type FileRecord,
  type FilesState,
  type FileUsage,
} from '@meridian/domain';

/**
 * The files read model's answers computed from the pure fold (foldFiles), in memory: the
 * reference the read model must match in tests, and the read model of unit tests. Not used by
 * the apps (they ask the read model in ClickHouse), so it walks the whole catalog.
 */

/**
 * The caller's files, newest definition first: their own and the ones shared with them (an
 * admin sees every live file). `name_contains` matches case-insensitively. The cursor is the
 * definition position of the last file of the previous page.
 */
export function listFiles(state: FilesState, caller: Caller, query: FileListQuery): FileListPage {
  const needle = query.name_contains?.toLowerCase();
  const before = query.cursor ?? Number.POSITIVE_INFINITY;
  const out: Array<{ file: FileRecord; access: Access }> = [];
  for (let i = state.order.length - 1; i >= 0; i--) {
    const file = state.order[i]!;
    if (file.seq >= before || !isLive(state, file)) continue;
    const access = fileAccess(file, caller);
    if (access === null) continue;
    if (needle !== undefined && !file.file_name.toLowerCase().includes(needle)) continue;
    if (out.length === query.limit) return { files: out, next_cursor: out[out.length - 1]!.file.seq };
    out.push({ file, access });
  }
  return { files: out, next_cursor: null };
}

/** Per owner with live files: their bytes and how many (the quota's and the files cap's usage). */
export function usageOf(state: FilesState): Map<string, FileUsage> {
  const usage = new Map<string, FileUsage>();
  for (const file of state.files.values()) {
    const had = usage.get(file.owner) ?? { bytes: 0, files: 0 };
    usage.set(file.owner, { bytes: had.bytes + file.size, files: had.files + 1 });
  }
  return usage;
}
