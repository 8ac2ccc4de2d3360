import { z } from 'zod';
import { fileEverDefined, isUuid, visibleFile, type UserRecord } from '@meridian/domain';
import type { FilesCommands } from './deps.ts';

/** The {file_id} of every route about one file. */
export const fileIdParam = z.object({ file_id: z.string().describe('UUID from the file list; anything else is 404, as an unknown file') });

/** The file if the caller may see it; an id not folded here yet gets one read of the log to its end first. */
export async function findFile(files: FilesCommands, fileId: string, user: UserRecord): Promise<ReturnType<typeof visibleFile>> {
  if (!fileEverDefined(files.state(), fileId) && isUuid(fileId)) await files.syncToEnd();
  return visibleFile(files.state(), fileId, user);
}
