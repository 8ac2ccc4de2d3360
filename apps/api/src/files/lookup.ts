import { z } from 'zod';
import { fileAccess, isUuid, NO_SUCH_FILE, notFound, type Access, type FileRecord, type UserRecord } from '@meridian/domain';
import type { FileCatalog } from './catalog.ts';

/** The {file_id} of every route about one file. */
export const fileIdParam = z.object({ file_id: z.string().describe('UUID from the file list; anything else is 404, as an unknown file') });

/**
 * The file if the caller may see it, else the one 404. An id the read model does not show the
 * caller (unknown or someone else's: the same path) is asked again once the projection has
 * reached the files log's end (bounded), so a file is found right after its definition
 * succeeded, on any instance.
 */
export async function findFile(files: FileCatalog, fileId: string, user: UserRecord): Promise<{ file: FileRecord; access: Access }> {
  if (!isUuid(fileId)) throw notFound(NO_SUCH_FILE);
  const lookup = async () => {
    const file = await files.get(fileId);
    const access = fileAccess(file, user);
    return file && access !== null ? { file, access } : null;
  };
  let found = await lookup();
  if (!found) {
    await files.current();
    found = await lookup();
  }
  if (!found) throw notFound(NO_SUCH_FILE);
  return found;
}
