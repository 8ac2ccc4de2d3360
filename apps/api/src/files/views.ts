import { z } from 'zod';
import { formatTimestamp, type Access, type FileListEntry, type FileRecord } from '@meridian/domain';

/** One element of files_list: exactly the seed's fields. */
export const fileEntrySchema = z.object({
  created_at: z.string().describe('ISO 8601 with a +hhmm offset, e.g. 2024-01-02T03:04:05+0000'),
  entitlement: z.enum(['rw', 'r']).describe("the caller's access: rw for the owner, an rw grantee or an admin; r for a reader"),
  file_description: z.string(),
  file_id: z.uuid(),
  file_name: z.string(),
  user_name: z.string().describe('the owner'),
});

export const fileDetailSchema = fileEntrySchema.extend({
  size: z.number().int().describe('bytes'),
  sha256: z.string().describe("hex SHA-256 of the bytes; the download's ETag"),
  content_type: z.string(),
  shared_with: z
    .array(z.object({ user_name: z.string(), access: z.enum(['r', 'rw']) }))
    .optional()
    .describe('shown to the owner and admins only'),
});

export type FileEntry = z.infer<typeof fileEntrySchema>;

export function fileEntry(file: FileListEntry, access: Access): FileEntry {
  return {
    // Whole seconds, as the seed's YYYY-MM-DDTHH:MM:SS+hhmm shows them.
    created_at: formatTimestamp(Math.floor(file.created_at / 1000) * 1000),
    entitlement: access,
    file_description: file.description,
    file_id: file.file_id,
    file_name: file.file_name,
    user_name: file.owner,
  };
}

export function fileDetail(file: FileRecord, access: Access, showGrants: boolean): z.infer<typeof fileDetailSchema> {
  return {
    ...fileEntry(file, access),
    size: file.size,
    sha256: file.sha256,
    content_type: file.content_type,
    ...(showGrants
      ? { shared_with: [...file.grants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([user_name, a]) => ({ user_name, access: a })) }
      : {}),
  };
}
